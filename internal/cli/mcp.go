package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/mcp"
)

// nopWriteCloser lets the MCP transport write to a.stdout without closing it.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// newMCPCmd is `agentproof mcp`: the semantic tools of one run as an MCP server on stdio
// (package mcp). Contract (the exec:codex and exec:opencode drivers rely
// on it): it reads agent.EnvAPIURL and agent.EnvRunToken (required), agent.EnvRunID
// (optional: else the run named in the token) and agent.EnvStateDir (optional: where the
// presentation file goes) from its own environment; a missing required variable is a
// usage error (exit 2) naming it; stdout carries only the MCP stream, logs go to stderr.
func newMCPCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve the control plane's semantic tools to an agent CLI over MCP (stdio)",
		Long:  strings.TrimSpace(mcpLong),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			apiURL, token := os.Getenv(agent.EnvAPIURL), os.Getenv(agent.EnvRunToken)
			if binding := os.Getenv(session.EnvRunBinding); strings.TrimSpace(binding) != "" {
				return serveBoundMCP(ctx, a, cmd, apiURL, binding)
			}
			var missing []string
			for _, kv := range [][2]string{{agent.EnvAPIURL, apiURL}, {agent.EnvRunToken, token}} {
				if strings.TrimSpace(kv[1]) == "" {
					missing = append(missing, kv[0]+" is not set")
				}
			}
			if len(missing) > 0 {
				return usageErrorf("%s: %s (the runner sets them for the agent CLI)", cmd.CommandPath(), strings.Join(missing, "; "))
			}
			runID := os.Getenv(agent.EnvRunID)
			if strings.TrimSpace(runID) == "" {
				id, ok := mcp.RunIDFromToken(token)
				if !ok {
					return usageErrorf("%s: %s is not set and %s does not name a run", cmd.CommandPath(), agent.EnvRunID, agent.EnvRunToken)
				}
				runID = id
			}
			api, err := mcp.Dial(ctx, apiURL, token)
			if err != nil {
				return usageErrorf("%s: %s: %v", cmd.CommandPath(), agent.EnvAPIURL, err)
			}
			logger := slog.New(slog.NewTextHandler(a.stderr, nil)).With("run", runID)
			srv, err := mcp.NewServer(mcp.Config{RunID: runID, RunToken: token, StateDir: os.Getenv(agent.EnvStateDir),
				Version: readVersion().Version, Logger: logger}, api)
			if err != nil {
				return err
			}
			return a.serveMCP(ctx, srv)
		},
	}
}

// mcpLong is the help of 'agentproof mcp'.
const mcpLong = `
Serve one run's semantic tools as an MCP server on stdin/stdout, for a real agent CLI
(Codex, OpenCode, Claude Code) to call. The agent CLI starts it; you do not run it by
hand. Tools: report_progress, write_document, request_human_input,
register_deliverable, finish_task, block_task, request_review, create_task,
set_dependencies, request_approval, decide_approval, comment_on_approval,
control_workspace_service, schedule_wake, reassign_task, create_skill, and the read
tools get_task_context, list_documents, read_document. Each call goes to the control
plane's agent API with the run token; a denial comes back as a tool error whose text
starts with the control plane's error code.

Environment (set by the runner, passed on by the CLI):
  AGENTPROOF_API_URL          the agent API URL (.../api/companies/<company>), required
  AGENTPROOF_RUN_TOKEN        the run token, required
  AGENTPROOF_RUN_ID           the run id (default: the run the token names)
  AGENTPROOF_AGENT_STATE_DIR  where the run's presented message id is recorded (optional)
  AGENTPROOF_RUN_BINDING      instead of the token and run id: the run binding file of a
                              warm ACP session; every call acts for the run it names now
  AGENTPROOF_PERMISSION_RELAY with a run binding: the session's permission relay socket;
                              the server then also serves permission_prompt, Claude Code's
                              --permission-prompt-tool (app:claude)

finish_task, request_review and block_task present their comment as the run's message
(present: false opts out; report_progress presents only with present: true).

Codex ($CODEX_HOME/config.toml, or the same keys as -c flags):
  [mcp_servers.agentproof]
  command = "/usr/local/bin/agentproof"
  args = ["mcp"]
  env_vars = ["AGENTPROOF_API_URL", "AGENTPROOF_RUN_TOKEN", "AGENTPROOF_RUN_ID", "AGENTPROOF_AGENT_STATE_DIR"]

OpenCode (opencode.json or OPENCODE_CONFIG_CONTENT):
  {"mcp": {"agentproof": {"type": "local", "enabled": true,
    "command": ["/usr/local/bin/agentproof", "mcp"],
    "environment": {"AGENTPROOF_API_URL": "http://127.0.0.1:PORT/api/companies/ID",
                    "AGENTPROOF_RUN_TOKEN": "..."}}}}

Exit codes: 0 when the client closes stdin, 2 when a required variable is missing, 70
on an internal error (a bug in agentproof).`

// serveBoundMCP is `agentproof mcp` with a run binding file (session.EnvRunBinding): a
// warm ACP session's server, whose every call acts for the run the file names when
// the call starts (mcp.FileBinding). The binding must be an absolute path and the API
// URL set (usage errors otherwise); the file itself is read per call.
func serveBoundMCP(ctx context.Context, a *app, cmd *cobra.Command, apiURL, binding string) error {
	var missing []string
	if strings.TrimSpace(apiURL) == "" {
		missing = append(missing, agent.EnvAPIURL+" is not set")
	}
	if !filepath.IsAbs(binding) {
		missing = append(missing, session.EnvRunBinding+" must be an absolute path")
	}
	if len(missing) > 0 {
		return usageErrorf("%s: %s (the runner sets them for the agent)", cmd.CommandPath(), strings.Join(missing, "; "))
	}
	if _, err := mcp.Dial(ctx, apiURL, "unbound"); err != nil {
		return usageErrorf("%s: %s: %v", cmd.CommandPath(), agent.EnvAPIURL, err)
	}
	logger := slog.New(slog.NewTextHandler(a.stderr, nil)).With("binding", filepath.Base(filepath.Dir(binding)))
	srv, err := mcp.NewServer(mcp.Config{StateDir: os.Getenv(agent.EnvStateDir), Version: readVersion().Version, Logger: logger,
		Bind: mcp.FileBinding(apiURL, binding), PermissionRelay: os.Getenv(session.EnvPermissionRelay)}, nil)
	if err != nil {
		return err
	}
	return a.serveMCP(ctx, srv)
}

// piTools are the semantic tools (package mcp) as agentproof's Pi extension registers
// them for rpc:pi runs (heartbeat.Config.PiTools), built once per process (every
// in-process instance of `run` shares them; nothing writes to them).
var piTools = sync.OnceValue(func() []agent.PiTool {
	var out []agent.PiTool
	for _, t := range mcp.Tools() {
		out = append(out, agent.PiTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	return out
})

// serveMCP serves srv over the command's stdin and stdout until the client leaves
// (end of input) or the command is cancelled, neither an error.
func (a *app) serveMCP(ctx context.Context, srv *sdk.Server) error {
	err := srv.Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(a.stdin), Writer: nopWriteCloser{a.stdout}})
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}
