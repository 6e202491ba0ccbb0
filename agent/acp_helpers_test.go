package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	acp "github.com/coder/acp-go-sdk"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/mcp"
)

// stubMCPTools are the semantic tools the stub MCP server offers.
var stubMCPTools = []string{"finish_task", "report_progress", "write_document", "request_human_input", "request_review", "block_task"}

// mcpCall is one call the stub MCP server recorded.
type mcpCall struct {
	Tool     string         `json:"tool"`
	Args     map[string]any `json:"args"`
	RunID    string         `json:"runId"`
	TokenSet bool           `json:"tokenSet"`
	APIURL   string         `json:"apiUrl"`
}

// stubMCP is a semantic-tools MCP server on stdio that records every call in
// $AGENTPROOF_AGENT_STATE_DIR/mcp-calls.jsonl with the run identity from its own
// environment (what the ACP client put in session/new) or from the run binding file it
// names, and answers "ok <tool>"; a call with args.fail true gets a tool error.
func stubMCP() int {
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "stub", Version: "1"}, nil)
	var mu sync.Mutex
	for _, name := range stubMCPTools {
		srv.AddTool(&mcpsdk.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			c := mcpCall{Tool: name, Args: args, RunID: os.Getenv(agent.EnvRunID), TokenSet: os.Getenv(agent.EnvRunToken) != "", APIURL: os.Getenv(agent.EnvAPIURL)}
			if path := os.Getenv(session.EnvRunBinding); path != "" {
				// a warm (or app-server) session's server: the run bound now
				if b, err := session.ReadRunBinding(path); err == nil {
					c.RunID, c.TokenSet = b.RunID, b.RunToken != ""
				}
			}
			b, _ := json.Marshal(c)
			mu.Lock()
			f, err := os.OpenFile(filepath.Join(os.Getenv(agent.EnvStateDir), "mcp-calls.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err == nil {
				_, _ = f.Write(append(b, '\n'))
				_ = f.Close()
			}
			mu.Unlock()
			if args["fail"] == true {
				return &mcpsdk.CallToolResult{IsError: true, Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "board_input_invalid: refused"}}}, nil
			}
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "ok " + name}}}, nil
		})
	}
	if relay := os.Getenv(session.EnvPermissionRelay); relay != "" {
		// Claude Code's permission prompt tool, as agentproof's own server serves it.
		srv.AddTool(&mcpsdk.Tool{Name: mcp.PermissionPromptTool, InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			text, _ := mcp.RelayPermission(ctx, relay, req.Params.Arguments)
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: text}}}, nil
		})
	}
	if err := srv.Run(context.Background(), &mcpsdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "stub mcp:", err)
		return 1
	}
	return 0
}

// readMCPCalls reads the stub MCP server's record in stateDir.
func readMCPCalls(stateDir string) []mcpCall {
	b, _ := os.ReadFile(filepath.Join(stateDir, "mcp-calls.jsonl"))
	var out []mcpCall
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var c mcpCall
		if json.Unmarshal([]byte(line), &c) == nil && c.Tool != "" {
			out = append(out, c)
		}
	}
	return out
}

// hostileACP is an ACP agent that misbehaves in one way (mode):
//
//	hang           never ends a prompt, ignores session/cancel
//	flood          answers a prompt with message chunks without end
//	exit           exits 3 in the middle of a prompt
//	fs             tries file operations inside and outside the workspace, then ends the turn
//	badproto       sends an update for another session, an update of an unknown tool
//	               call and a line that is not JSON, then ends the turn
//	ignore-cancel  asks a permission; when it is cancelled, ends the turn with end_turn
//	orphan         starts a descendant in its own session and answers with its pid
//	orphan-at-exit when its client closes the stream, starts a descendant in its own
//	               session, then exits
//	echo-token     answers with the run token it found in session/new's MCP server
func hostileACP(mode string) int {
	a := &hostile{mode: mode}
	open := make(chan struct{})
	conn := acp.NewAgentSideConnection(a, os.Stdout, readerFunc(func(p []byte) (int, error) { <-open; return os.Stdin.Read(p) }))
	a.conn = conn
	close(open)
	<-conn.Done()
	if mode == "orphan-at-exit" {
		// Born after the client's snapshot, in its own session: only the marker finds it.
		self, _ := os.Executable()
		cmd := exec.Command(self, "hostile-grandchild", filepath.Join(a.cwd, "late-ticks"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		_ = cmd.Start()
		for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(a.cwd, "late-ticks")); err == nil {
				break
			}
		}
	}
	return 0
}

type hostile struct {
	mode  string
	conn  *acp.AgentSideConnection
	cwd   string
	token string
}

func (h *hostile) Initialize(context.Context, acp.InitializeRequest) (acp.InitializeResponse, error) {
	return acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersionNumber, AgentInfo: &acp.Implementation{Name: "hostile-" + h.mode, Version: "0"}, AuthMethods: []acp.AuthMethod{}}, nil
}

func (h *hostile) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (h *hostile) NewSession(_ context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	h.cwd = p.Cwd
	for _, m := range p.McpServers {
		if m.Stdio != nil {
			for _, e := range m.Stdio.Env {
				if e.Name == agent.EnvRunToken {
					h.token = e.Value
				}
			}
		}
	}
	return acp.NewSessionResponse{SessionId: "hostile-1"}, nil
}

func (h *hostile) Cancel(context.Context, acp.CancelNotification) error { return nil }

func (h *hostile) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, nil
}

func (h *hostile) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, nil
}

func (h *hostile) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, nil
}

func (h *hostile) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, nil
}

func (h *hostile) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, nil
}

func (h *hostile) say(sid acp.SessionId, text string) {
	_ = h.conn.SessionUpdate(context.Background(), acp.SessionNotification{SessionId: sid, Update: acp.UpdateAgentMessageText(text)})
}

func (h *hostile) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	sid := p.SessionId
	switch h.mode {
	case "hang":
		select {}
	case "flood":
		chunk := strings.Repeat("x", 64<<10)
		for {
			h.say(sid, chunk)
		}
	case "exit":
		h.say(sid, "going away")
		os.Exit(3)
	case "fs":
		outside := filepath.Join(filepath.Dir(h.cwd), "outside")
		_ = os.MkdirAll(outside, 0o755)
		_ = os.Symlink(outside, filepath.Join(h.cwd, "link"))
		var results []string
		try := func(what string, err error) {
			results = append(results, fmt.Sprintf("%s=%v", what, err == nil))
		}
		_, err := h.conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: sid, Path: "/etc/hostname"})
		try("read-outside", err)
		_, err = h.conn.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionId: sid, Path: filepath.Join(h.cwd, "..", "escape.txt"), Content: "escaped"})
		try("write-dotdot", err)
		_, err = h.conn.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionId: sid, Path: filepath.Join(h.cwd, "link", "via-link.txt"), Content: "escaped"})
		try("write-symlink", err)
		_, err = h.conn.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionId: sid, Path: "relative.txt", Content: "x"})
		try("write-relative", err)
		_, err = h.conn.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionId: sid, Path: filepath.Join(h.cwd, "sub", "ok.txt"), Content: "line1\nline2\nline3\n"})
		try("write-inside", err)
		r, err := h.conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: sid, Path: filepath.Join(h.cwd, "sub", "ok.txt"), Line: acp.Ptr(2), Limit: acp.Ptr(1)})
		try("read-inside", err)
		_, err = h.conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: sid, Path: filepath.Join(h.cwd, "missing.txt")})
		var re *acp.RequestError
		results = append(results, fmt.Sprintf("missing-code=%v", errors.As(err, &re) && re.Code == agent.ACPResourceNotFound))
		h.say(sid, strings.Join(results, " ")+" read="+strings.TrimSpace(r.Content))
	case "badproto":
		_ = h.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: "someone-else", Update: acp.UpdateAgentMessageText("not yours")})
		_ = h.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.UpdateToolCall("never-started", acp.WithUpdateStatus(acp.ToolCallStatusCompleted))})
		fmt.Fprintln(os.Stdout, "this line is not JSON-RPC")
		h.say(sid, "done")
	case "ignore-cancel":
		resp, err := h.conn.RequestPermission(context.WithoutCancel(ctx), acp.RequestPermissionRequest{SessionId: sid,
			ToolCall: acp.ToolCallUpdate{ToolCallId: "w1", Title: acp.Ptr("write f"), Kind: acp.Ptr(acp.ToolKindEdit)},
			Options:  []acp.PermissionOption{{OptionId: "ok", Name: "ok", Kind: acp.PermissionOptionKindAllowOnce}, {OptionId: "no", Name: "no", Kind: acp.PermissionOptionKindRejectOnce}}})
		if err == nil && resp.Outcome.Cancelled != nil {
			_ = h.conn.SessionUpdate(context.Background(), acp.SessionNotification{SessionId: sid, Update: acp.StartToolCall("w1", "write f", acp.WithStartStatus(acp.ToolCallStatusCompleted))})
		}
		return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
	case "orphan":
		// A descendant in its own session (not the agent's process group), still running
		// when the client closes the session.
		self, _ := os.Executable()
		cmd := exec.Command(self, "hostile-grandchild", filepath.Join(h.cwd, "ticks"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return acp.PromptResponse{}, err
		}
		h.say(sid, strconv.Itoa(cmd.Process.Pid))
	case "echo-token":
		fmt.Fprintln(os.Stderr, "stderr token "+h.token)
		h.say(sid, "my token is "+h.token)
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// readerFunc adapts a function to io.Reader.
type readerFunc func(p []byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// newACP builds an ACP driver from a driver string and a map-shaped driverConfig
// through the same parsers the heartbeat runner's configuration goes through
// (driver.Parse, api.DriverConfigOf).
func newACP(name string, config map[string]any) (*agent.ACPDriver, error) {
	n, err := driver.Parse(name)
	if err != nil {
		return nil, err
	}
	dc, err := api.DriverConfigOf(config)
	if err != nil {
		return nil, err
	}
	return agent.NewACP(n, dc)
}
