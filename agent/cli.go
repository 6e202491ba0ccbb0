package agent

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/worker"
)

// The real agent CLIs: drivers
// exec:codex, exec:opencode and exec:claude run the CLI's native binary directly (never
// the npm wrapper, whose children would escape the process group; never a shell),
// non-interactively with its JSON
// event stream on stdout (captured as transcript evidence and read for usage), stdin
// /dev/null (a CLI reads a piped stdin to its end before it starts), an explicit environment, per-run HOME / XDG / CODEX_HOME /
// CLAUDE_CONFIG_DIR directories, telemetry, update checks and plugins off, and the
// semantic tools registered as the MCP server `<agentproof> mcp` through the CLI's own
// configuration. The run's API URL, run id and token reach that server only through
// environment variables the CLI forwards (never argv, never a file).

// CLI driver configuration keys: the JSON names of the api.DriverConfig fields an
// exec:<cli> driver reads (the campaign executor still sets them in a catalog
// driverConfig map).
const (
	// CLIKeyBinary is the absolute path of the CLI's native binary. The executor sets it
	// from the agents cache (package agent/clis) before it creates the agent.
	CLIKeyBinary = "binary"
	// CLIKeyModelBaseURL is the root URL of the attempt's scripted model
	// ("http://127.0.0.1:PORT"); run n of the agent uses ROOT/runs/<n>/v1. The executor
	// sets it unless the campaign runs live.
	CLIKeyModelBaseURL = "modelBaseUrl"
	// CLIKeyLive holds the live provider of the profile (api.LiveProvider); it is used
	// only when modelBaseUrl is absent (`agentproof run --live`).
	CLIKeyLive = "live"
	// CLIKeyScript names the model script the executor derives for the scripted model:
	// "oracle" (the case's reference turns as tool calls; the default), "nop" (a text
	// answer only) or "wrong" (a call of a tool no CLI offers: the scripted model refuses
	// it naming the step, the CLI exits non-zero). The driver itself does not read it.
	CLIKeyScript = "script"
	// CLIKeyResultGrace is how long (ms, 1..MaxResultGraceMs, below timeoutMs) the CLI
	// may take to exit after its terminal event (TerminalEvent) before the worker stops
	// it; the run is then graded on that result (default DefaultResultGrace).
	CLIKeyResultGrace = "resultGraceMs"
	// CLIKeyModel is the model id the CLI asks the scripted model for (default
	// ScriptedModelID); the scripted model answers under any id. With a live provider
	// the id is live.model.
	CLIKeyModel = "model"
)

// DefaultResultGrace is a CLI's grace between its terminal event and its exit when
// driverConfig sets no resultGraceMs. The pinned CLIs exit within about 250 ms of it.
const DefaultResultGrace = worker.DefaultResultGrace

// MaxResultGraceMs bounds driverConfig resultGraceMs (ms).
const MaxResultGraceMs = 60_000

// Model scripts a CLI profile may ask the executor for (driverConfig script).
const (
	ScriptOracle = "oracle"
	ScriptNop    = "nop"
	ScriptWrong  = "wrong"
	// ScriptUndo is the oracle's scripts with every native write followed by a shell
	// command that writes the file and deletes it again (scriptedmodel.UndoWrites): a
	// covering agent only the workspace watcher sees.
	ScriptUndo = "wrong-undo"
)

// ScriptedModelID is the model id every CLI asks the scripted model for.
const ScriptedModelID = "scripted-model"

// ScriptedAPIKeyVar names the variable holding the scripted model's API key: a fixed,
// non-secret placeholder (the scripted model checks no key; the CLIs insist on one).
const ScriptedAPIKeyVar = "AGENTPROOF_MODEL_API_KEY"

// ScriptedAPIKey is the placeholder value of ScriptedAPIKeyVar.
const ScriptedAPIKey = "agentproof-scripted-model"

// MCPServerName is the name of the semantic-tools MCP server in every CLI's
// configuration; the tools reach the model as e.g. agentproof__finish_task (Codex),
// agentproof_finish_task (OpenCode) or mcp__agentproof__finish_task (Claude Code).
const MCPServerName = "agentproof"

// DefaultCLIMaxOutputBytes bounds a CLI's stdout+stderr when driverConfig sets no
// maxOutputBytes (bytes): the JSON event stream of a long run is larger than a
// built-in agent's log.
const DefaultCLIMaxOutputBytes = 16 << 20

// cliDriver runs one of the pinned real agent CLIs.
type cliDriver struct {
	cli      string // codex | opencode | claude | kilo | qwen | copilot
	binary   string
	node     string // Node.js, for a CLI whose binary is a JavaScript entry script
	model    string // the scripted model's id as the CLI asks for it
	modelURL string
	live     *api.LiveProvider
	bounds   bounds
	grace    time.Duration // resultGraceMs
}

// newCLI reads the driverConfig of exec:<name> (name is a pinned CLI: driver.Parse
// checked it).
func newCLI(name driver.Name, config api.DriverConfig, ce *ConfigError) Driver {
	d := cliDriver{cli: name.Arg, model: ScriptedModelID}
	d.bounds = parseBounds(config, name, ce, []string{CLIKeyBinary, CLIKeyModelBaseURL, CLIKeyLive, CLIKeyScript, CLIKeyResultGrace, CLIKeyModel, ACPKeyNode})
	if m := config.Model; m != "" {
		if len(m) > 200 || strings.ContainsFunc(m, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '"' || r == '\\' }) {
			ce.Problems = append(ce.Problems, fmt.Sprintf("%s %q must be a model id (at most 200 characters, no spaces, quotes or control characters)", CLIKeyModel, m))
		}
		d.model = m
	}
	if config.MaxOutputBytes == nil {
		d.bounds.maxOutput = DefaultCLIMaxOutputBytes
	}
	d.grace = resultGrace(config.ResultGraceMs, d.bounds.timeout, ce)
	if s := config.Binary; s != "" {
		if !filepath.IsAbs(s) || strings.ContainsRune(s, 0) {
			ce.Problems = append(ce.Problems, fmt.Sprintf("binary %q must be an absolute path", s))
		}
		d.binary = s
	}
	if s := config.Node; s != "" {
		if !filepath.IsAbs(s) || strings.ContainsRune(s, 0) {
			ce.Problems = append(ce.Problems, fmt.Sprintf("node %q must be an absolute path", s))
		}
		d.node = s
	}
	if s := config.ModelBaseURL; s != "" {
		if !strings.HasPrefix(s, "http://127.0.0.1:") && !strings.HasPrefix(s, "http://[::1]:") && !strings.HasPrefix(s, "http://localhost:") {
			ce.Problems = append(ce.Problems, fmt.Sprintf("modelBaseUrl %q must be a loopback http URL (the scripted model)", s))
		}
		d.modelURL = strings.TrimRight(s, "/")
	}
	if lp := config.Live; lp != nil {
		checkLiveProvider(lp, ce)
		d.live = lp
	}
	if v := config.Script; v != "" && v != ScriptOracle && v != ScriptNop && v != ScriptWrong && v != ScriptUndo {
		ce.Problems = append(ce.Problems, fmt.Sprintf("script %q is not %s, %s, %s or %s", v, ScriptOracle, ScriptNop, ScriptWrong, ScriptUndo))
	}
	return d
}

// resultGrace is the grace (resultGraceMs) a CLI gets to exit after its terminal
// result: DefaultResultGrace when v is nil, else v milliseconds, which must be in
// 1..MaxResultGraceMs and below the run's timeout (a problem in ce, and the default,
// otherwise).
func resultGrace(v *int64, timeout time.Duration, ce *ConfigError) time.Duration {
	if v == nil {
		return DefaultResultGrace
	}
	n := *v
	switch {
	case n <= 0 || n > MaxResultGraceMs:
		ce.Problems = append(ce.Problems, fmt.Sprintf("%s %d must be a whole number of milliseconds in 1..%d", CLIKeyResultGrace, n, MaxResultGraceMs))
	case time.Duration(n)*time.Millisecond >= timeout:
		ce.Problems = append(ce.Problems, fmt.Sprintf("%s %d must be below timeoutMs (%d)", CLIKeyResultGrace, n, timeout.Milliseconds()))
	default:
		return time.Duration(n) * time.Millisecond
	}
	return DefaultResultGrace
}

// checkLiveProvider adds to ce the problems of a live provider: its base URL must be
// http(s), its model given, and its credential an environment variable name.
func checkLiveProvider(lp *api.LiveProvider, ce *ConfigError) {
	if !strings.HasPrefix(lp.BaseURL, "https://") && !strings.HasPrefix(lp.BaseURL, "http://") {
		ce.Problems = append(ce.Problems, "live.baseUrl must be an http(s) URL")
	}
	if lp.Model == "" {
		ce.Problems = append(ce.Problems, "live.model is required")
	}
	if !envNameRE().MatchString(lp.Credential) {
		ce.Problems = append(ce.Problems, "live.envVar must name the credential holding the key (an environment variable name)")
	}
}

func (d cliDriver) Name() string { return "exec:" + d.cli }

// CLIRunDir is the directory of run n (1-based) of a CLI agent below its state
// directory: STATE/cli-runs/<n>. It holds the run's HOME (home/), XDG directories
// (xdg/config, xdg/data, xdg/cache, xdg/state), TMPDIR (tmp/), CODEX_HOME (codex-home/)
// or CLAUDE_CONFIG_DIR (claude/), and run-id (the id of the run that owns it).
func CLIRunDir(stateDir string, n int) string {
	return filepath.Join(stateDir, "cli-runs", strconv.Itoa(n))
}

// runIndex returns the 1-based index of runID among the agent's CLI runs: the existing
// run directory that names it, or the next free index. Runs of one agent are sequential
// (a company runs one run at a time), so counting is race-free.
func runIndex(stateDir, runID string) (int, error) {
	entries, err := os.ReadDir(filepath.Join(stateDir, "cli-runs"))
	if err != nil && !os.IsNotExist(err) {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		i, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(stateDir, "cli-runs", e.Name(), "run-id")); err == nil && string(b) == runID {
			return i, nil
		}
		n = max(n, i)
	}
	return n + 1, nil
}

// Launch prepares run rc of the CLI: it finds the run's index among the agent's CLI
// runs, creates the run's private directories (CLIRunDir; the one side effect of a CLI
// driver's Launch) and builds the spec: the native binary as Path, the CLI's
// non-interactive argv, the explicit environment (cliEnv) and the workspace as working
// directory. Errors: a missing binary or model endpoint, a RunEnv without the run's
// identity, an unusable state directory.
func (d cliDriver) Launch(rc controlplane.RunContext, env RunEnv) (worker.Spec, error) {
	if err := requireRun(env, true); err != nil {
		return worker.Spec{}, err
	}
	if err := requireExecutable(env); err != nil {
		return worker.Spec{}, err
	}
	if d.binary == "" {
		return worker.Spec{}, fmt.Errorf("agent: %s: no native binary configured (driverConfig binary; `agentproof agents install %s`)", d.Name(), d.cli)
	}
	if d.modelURL == "" && d.live == nil {
		return worker.Spec{}, fmt.Errorf("agent: %s: no model endpoint: driverConfig needs modelBaseUrl (the scripted model) or live", d.Name())
	}
	if d.modelURL == "" && d.live != nil {
		if _, ok := env.Secrets[d.live.Credential]; !ok {
			return worker.Spec{}, fmt.Errorf("agent: %s: live credential %s is not bound to a resolved secret", d.Name(), d.live.Credential)
		}
	}
	n, err := runIndex(env.StateDir, env.RunID)
	if err != nil {
		return worker.Spec{}, fmt.Errorf("agent: %s: reading the agent's runs: %w", d.Name(), err)
	}
	dir := CLIRunDir(env.StateDir, n)
	p := d.plan(rc, env, n, dir)
	for _, sub := range p.dirs {
		if err := os.MkdirAll(sub, 0o700); err != nil {
			return worker.Spec{}, fmt.Errorf("agent: %s: creating the run's directories: %w", d.Name(), err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "run-id"), []byte(env.RunID), 0o600); err != nil {
		return worker.Spec{}, fmt.Errorf("agent: %s: %w", d.Name(), err)
	}
	for name, body := range p.files {
		if err := os.WriteFile(name, body, 0o600); err != nil {
			return worker.Spec{}, fmt.Errorf("agent: %s: %w", d.Name(), err)
		}
	}
	e, err := apiEnv(env, p.env...)
	if err != nil {
		return worker.Spec{}, err
	}
	// HOME is the run's own home, not the agent's state directory.
	for i, kv := range e {
		if strings.HasPrefix(kv, "HOME=") {
			e[i] = "HOME=" + filepath.Join(dir, "home")
		}
		if strings.HasPrefix(kv, "PATH=") {
			e[i] = "PATH=" + cliPath
		}
		if strings.HasPrefix(kv, "LANG=") {
			e[i] = "LANG=C.UTF-8"
		}
	}
	cli := d.cli
	path, args := d.binary, append([]string{d.binary}, p.args...)
	if d.node != "" {
		path, args = d.node, append([]string{d.node, d.binary}, p.args...)
	} else if strings.HasSuffix(d.binary, ".js") || strings.HasSuffix(d.binary, ".mjs") {
		return worker.Spec{}, fmt.Errorf("agent: %s: binary %s is a JavaScript entry script: driverConfig node must name the Node.js binary", d.Name(), d.binary)
	}
	return worker.Spec{Path: path, Args: args, Env: e, Dir: env.Workspace,
		Timeout: d.bounds.timeout, MaxOutputBytes: d.bounds.maxOutput, NullStdin: true,
		ResultLine: func(line []byte) bool { return TerminalEvent(cli, line) }, ResultGrace: d.grace}, nil
}

// cliPath is the PATH of a CLI process: its shell tool runs ordinary programs.
const cliPath = "/usr/local/bin:/usr/bin:/bin"

// cliPlan is what one CLI run needs: argv after the program, extra environment, the
// directories to create and files to write (absolute paths).
type cliPlan struct {
	args  []string
	env   []string
	dirs  []string
	files map[string][]byte
}

// plan builds the CLI's command line and environment for run n in dir (pure: Launch
// creates what it lists).
func (d cliDriver) plan(rc controlplane.RunContext, env RunEnv, n int, dir string) cliPlan {
	home := filepath.Join(dir, "home")
	p := cliPlan{
		dirs:  []string{home, filepath.Join(dir, "tmp"), filepath.Join(dir, "xdg", "config"), filepath.Join(dir, "xdg", "data"), filepath.Join(dir, "xdg", "cache"), filepath.Join(dir, "xdg", "state")},
		files: map[string][]byte{},
		env: []string{
			"XDG_CONFIG_HOME=" + filepath.Join(dir, "xdg", "config"),
			"XDG_DATA_HOME=" + filepath.Join(dir, "xdg", "data"),
			"XDG_CACHE_HOME=" + filepath.Join(dir, "xdg", "cache"),
			"XDG_STATE_HOME=" + filepath.Join(dir, "xdg", "state"),
			"TMPDIR=" + filepath.Join(dir, "tmp"),
			"TERM=dumb", "NO_COLOR=1",
		},
	}
	prompt := Prompt(rc)
	modelURL, model, keyVar := "", d.model, ScriptedAPIKeyVar
	if d.modelURL != "" {
		modelURL = d.modelURL + "/runs/" + strconv.Itoa(n) + "/v1"
		p.env = append(p.env, ScriptedAPIKeyVar+"="+ScriptedAPIKey)
	} else {
		modelURL, model, keyVar = strings.TrimRight(d.live.BaseURL, "/"), d.live.Model, d.live.Credential
	}
	mcpVars := []string{EnvAPIURL, EnvRunToken, EnvRunID, EnvStateDir}
	switch d.cli {
	case "codex":
		codexHome := filepath.Join(dir, "codex-home")
		p.dirs = append(p.dirs, codexHome)
		p.env = append(p.env, "CODEX_HOME="+codexHome)
		p.args = CodexArgs(modelURL, model, keyVar, env.Executable, mcpVars, prompt)
	case "opencode":
		npm := "@ai-sdk/openai-compatible"
		if d.live != nil && d.modelURL == "" {
			npm = cmp.Or(d.live.NPM, "@ai-sdk/openai")
		}
		p.env = append(p.env, "OPENCODE_CONFIG_CONTENT="+OpenCodeConfig(npm, modelURL, model, keyVar, env.Executable, mcpVars))
		p.env = append(p.env, OpenCodeOfflineEnv...)
		p.openCodeConfigDir(filepath.Join(dir, "xdg", "config", "opencode"))
		p.args = []string{"run", "--format", "json", "-m", "agentproof/" + model, prompt}
	case "claude":
		cfgDir := filepath.Join(dir, "claude")
		p.dirs = append(p.dirs, cfgDir)
		mcpFile := filepath.Join(cfgDir, "agentproof-mcp.json")
		p.files[mcpFile] = ClaudeMCPConfig(env.Executable, mcpVars)
		base := strings.TrimSuffix(modelURL, "/v1")
		p.env = append(p.env, "CLAUDE_CONFIG_DIR="+cfgDir, "ANTHROPIC_BASE_URL="+base, "IS_SANDBOX=1")
		if d.modelURL != "" {
			p.env = append(p.env, "ANTHROPIC_API_KEY="+ScriptedAPIKey)
		} else if keyVar != "ANTHROPIC_API_KEY" {
			// The secret is bound under its credential name; Claude Code reads this one.
			p.env = append(p.env, "ANTHROPIC_API_KEY="+env.Secrets[keyVar])
		}
		p.env = append(p.env, ClaudeOfflineEnv...)
		p.env = append(p.env, ClaudeMCPWaitEnv()...) // the agentproof tools before the first model call
		p.args = []string{"-p", prompt, "--output-format", "stream-json", "--verbose", "--bare",
			"--model", model, "--permission-mode", "acceptEdits",
			"--allowedTools", "Bash,Edit,Read,mcp__" + MCPServerName,
			"--mcp-config", mcpFile, "--strict-mcp-config"}
	default:
		d.morePlan(&p, dir, modelURL, model, keyVar, env, mcpVars, prompt)
	}
	return p
}

// CodexArgs is the argv (after the program) of `codex exec` against a custom Responses
// provider at modelURL: JSONL events, no git check, no
// session files, no sandbox or approvals (the workspace is the attempt's private
// directory), no retries (a scripted-model refusal ends the run at once), analytics,
// feedback, update checks, OpenTelemetry, plugins and shell snapshots off, and the MCP
// server `<executable> mcp` forwarding mcpVars from Codex's environment (env_vars),
// required: without it Codex 0.171 sends its first model request without the server's
// tools when the server starts slowly (seen under load); with it Codex waits for the
// handshake (up to startup_timeout_sec) and exits 1 if the server cannot start.
func CodexArgs(modelURL, model, keyVar, executable string, mcpVars []string, prompt string) []string {
	quoted := make([]string, len(mcpVars))
	for i, v := range mcpVars {
		quoted[i] = strconv.Quote(v)
	}
	return []string{
		"exec", "--json", "--skip-git-repo-check", "--ephemeral",
		"--dangerously-bypass-approvals-and-sandbox",
		"-c", "model_provider=agentproof_model",
		"-c", fmt.Sprintf(`model_providers.agentproof_model={name="agentproof model",base_url=%s,env_key=%s,wire_api="responses",request_max_retries=0,stream_max_retries=0}`, strconv.Quote(modelURL), strconv.Quote(keyVar)),
		"-m", model,
		"-c", "analytics.enabled=false", "-c", "feedback.enabled=false",
		"-c", "check_for_update_on_startup=false", "-c", `otel.exporter="none"`,
		"--disable", "plugins", "--disable", "shell_snapshot",
		"-c", fmt.Sprintf(`mcp_servers.%s={command=%s,args=["mcp"],env_vars=[%s],required=true,startup_timeout_sec=60,tool_timeout_sec=120}`, MCPServerName, strconv.Quote(executable), strings.Join(quoted, ",")),
		prompt,
	}
}

// OpenCodeOfflineEnv are the variables that keep OpenCode from reaching the network
// beyond its model.
var OpenCodeOfflineEnv = []string{
	"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1",
	"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
	"OPENCODE_DISABLE_SHARE=1", "OPENCODE_DISABLE_CLAUDE_CODE=1",
	"OPENCODE_DISABLE_EXTERNAL_SKILLS=1",
}

// OpenCodeConfigDir returns the directories to create and the files to write (by path)
// that keep OpenCode from installing packages from the npm registry into its
// configuration directory dir ($XDG_CONFIG_HOME/opencode). At every start OpenCode
// installs its plugin package (@opencode-ai/plugin, with @opentui, React and tree-sitter
// behind it: megabytes of registry metadata) into each configuration directory whose
// node_modules is missing or whose package-lock.json does not list that package. The
// directory is a fresh one in every run and session, so every start of an offline
// OpenCode went to registry.npmjs.org (seconds to minutes, depending on the registry and
// the machine's load). The lock file lists the package as installed in an empty
// node_modules: nothing here loads an OpenCode plugin, so the package is never needed.
func OpenCodeConfigDir(dir string) (dirs []string, files map[string][]byte) {
	lock := `{"lockfileVersion":3,"requires":true,"packages":{"":{"dependencies":{"@opencode-ai/plugin":"*"}}}}` + "\n"
	return []string{filepath.Join(dir, "node_modules")}, map[string][]byte{filepath.Join(dir, "package-lock.json"): []byte(lock)}
}

// openCodeConfigDir adds OpenCodeConfigDir(dir) to p.
func (p *cliPlan) openCodeConfigDir(dir string) {
	dirs, files := OpenCodeConfigDir(dir)
	p.dirs = append(p.dirs, dirs...)
	maps.Copy(p.files, files)
}

// ClaudeOfflineEnv are the variables that keep Claude Code from reaching the network
// beyond its model and make it fail fast.
var ClaudeOfflineEnv = []string{
	"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1",
	"DISABLE_ERROR_REPORTING=1", "CLAUDE_CODE_MAX_RETRIES=0",
}

// OpenCodeConfig is OPENCODE_CONFIG_CONTENT: one provider "agentproof" (AI SDK package
// npm selects the wire format) at modelURL whose key OpenCode reads from keyVar
// ({env:…} substitution), sharing and autoupdate off, bash and edits allowed, web
// fetches denied, and the local MCP server `<executable> mcp` whose environment names
// mcpVars as {env:…} references (the values stay in OpenCode's environment), with a
// timeout of 60 s, as Codex and Claude Code get: OpenCode waits that long for the
// server to start and list its tools before its first model request, and then starts
// without them (docs/clis.md); it is also the limit of each tool call.
func OpenCodeConfig(npm, modelURL, model, keyVar, executable string, mcpVars []string) string {
	mcpEnv := map[string]string{}
	for _, v := range mcpVars {
		mcpEnv[v] = "{env:" + v + "}"
	}
	cfg := openCodeBase(npm, modelURL, model, keyVar, "allow")
	cfg["mcp"] = map[string]any{MCPServerName: map[string]any{
		"type": "local", "command": []string{executable, "mcp"}, "environment": mcpEnv, "enabled": true, "timeout": 60000,
	}}
	b, _ := json.Marshal(cfg) // maps: sorted keys, deterministic
	return string(b)
}

// openCodeBase is the part of an OpenCode configuration both its exec and its ACP
// runs share: the provider "agentproof" (npm package npm, selecting the wire format)
// serving model at modelURL with its key read from keyVar ({env:…} substitution),
// sharing and autoupdate off, web fetches denied, and bash and edits set to edits
// ("allow", or "ask": OpenCode asks its ACP client first).
func openCodeBase(npm, modelURL, model, keyVar, edits string) map[string]any {
	return map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"model":   "agentproof/" + model, "small_model": "agentproof/" + model,
		"autoupdate": false, "share": "disabled",
		"permission": map[string]any{"bash": edits, "edit": edits, "webfetch": "deny"},
		"provider": map[string]any{"agentproof": map[string]any{
			"npm": npm, "name": "agentproof model",
			"options": map[string]any{"baseURL": modelURL, "apiKey": "{env:" + keyVar + "}"},
			"models": map[string]any{model: map[string]any{
				"name": model, "tool_call": true, "limit": map[string]any{"context": 128000, "output": 4096},
			}},
		}},
	}
}

// ClaudeMCPConfig is the --mcp-config file of Claude Code: the stdio server
// `<executable> mcp` whose env names mcpVars as ${VAR} references, expanded by Claude
// Code from its own environment (no value is written to the file).
func ClaudeMCPConfig(executable string, mcpVars []string) []byte {
	env := map[string]string{}
	for _, v := range mcpVars {
		env[v] = "${" + v + "}"
	}
	b, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{MCPServerName: map[string]any{
		"type": "stdio", "command": executable, "args": []string{"mcp"}, "env": env,
	}}}, "", "  ")
	return append(b, '\n')
}

// Prompt is the message a CLI receives for run rc: the task, why the agent was woken
// (with the wake's payload and any interaction results, as JSON) and how to work
// through the semantic tools of the agentproof MCP server.
func Prompt(rc controlplane.RunContext) string {
	var b strings.Builder
	t := rc.ActiveTask
	fmt.Fprintf(&b, "You are working on task %s: %s\n", cmp.Or(t.Identifier, t.ID), t.Title)
	if t.Description != nil && *t.Description != "" {
		fmt.Fprintf(&b, "\n%s\n", *t.Description)
	}
	fmt.Fprintf(&b, "\nThis run was started because of: %s.\n", cmp.Or(string(rc.Wake.Reason), "assignment"))
	if len(rc.Wake.Payload) > 0 && string(rc.Wake.Payload) != "null" && string(rc.Wake.Payload) != "{}" {
		fmt.Fprintf(&b, "Wake details (JSON): %s\n", rc.Wake.Payload)
	}
	if len(rc.InteractionResults) > 0 {
		if ir, err := json.Marshal(rc.InteractionResults); err == nil {
			fmt.Fprintf(&b, "Answers to your earlier requests (JSON): %s\n", ir)
		}
	}
	if cv := rc.Conversation; cv != nil {
		fmt.Fprintf(&b, "\nThis task is the chat %q (session %d). The conversation so far:\n", cv.Title, cv.Generation)
		for _, m := range cv.Messages {
			fmt.Fprintf(&b, "[%s] %s\n", m.Author, m.Body)
		}
		b.WriteString("Answer the latest human message with post_chat_reply, or hand the work off with handoff_conversation " +
			"(a title, the plan and the assignee from get_task_context's conversation actors) when the human asks for it.\n")
	}
	b.WriteString("\nWork only through the tools of the agentproof MCP server (get_task_context, report_progress, " +
		"write_document, request_human_input, finish_task, request_review, block_task, …) and your shell for files " +
		"in the working directory. Post your final message with the tool that ends your turn.\n")
	return b.String()
}

// Report: the CLI exited 0 after its terminal event (TerminalEvent) → the run it left
// open is completed as succeeded; it emitted a terminal event that is not a failure and
// was stopped because it did not exit within the result grace → succeeded too, graded on
// that result (the summary says it was stopped); it exited 0 without a terminal event →
// failed, the event stream is incomplete (EventStreamComplete false: the CLI did not
// finish cleanly); any other ending → failed, with the exit code, the CLI's own error
// events and the stderr tail in the summary. Usage comes from the JSON event stream
// (Codex turn.completed, OpenCode step_finish, Claude Code result), the transcript is
// the event stream (events.jsonl) and stderr.
func (d cliDriver) Report(o worker.Outcome) Report {
	stdout, stderr := o.Output.Stdout(), o.Output.Stderr()
	ev := ParseEvents(d.cli, stdout)
	complete := ev.Terminal != ""
	r := Report{Summary: Summarize(o), RunStatus: controlplane.RunFailed, EventStreamComplete: &complete, Transcript: []Evidence{
		{Name: "events.jsonl", MediaType: "application/jsonl", Body: stdout},
		{Name: "stderr.log", MediaType: "text/plain", Body: stderr},
	}}
	cleanExit := o.Started && o.ExitCode != nil && *o.ExitCode == 0 && !o.TimedOut && !o.OutputExceeded && !o.Aborted
	switch {
	case cleanExit && complete:
		r.RunStatus = controlplane.RunSucceeded
	case o.StoppedAfterResult && complete && !ev.TerminalFailed && !o.OutputExceeded && !o.Aborted:
		r.RunStatus = controlplane.RunSucceeded
		r.Summary += fmt.Sprintf("; graded on its terminal event (%s): the CLI did not exit within %s of it", ev.Terminal, d.grace)
	case cleanExit:
		r.Summary += fmt.Sprintf("; exited 0 without its terminal event (%s): the event stream is incomplete", terminalName(d.cli))
	default:
		var parts []string
		if len(ev.Errors) > 0 {
			parts = append(parts, d.cli+" reported: "+strings.Join(lastN(ev.Errors, 3), " | "))
		}
		if tail := session.TailText(stderr, 600); tail != "" {
			parts = append(parts, "stderr tail: "+tail)
		}
		if len(parts) > 0 {
			r.Summary += "; " + strings.Join(parts, "; ")
		}
	}
	if ev.Oversized > 0 {
		r.Summary += fmt.Sprintf("; %d oversized event line(s) not parsed", ev.Oversized)
	}
	if u := ev.Usage(); u != nil {
		r.Usage = u
	}
	return r
}

// terminalName names cli's terminal event for a summary.
func terminalName(cli string) string {
	switch eventDialect(cli) {
	case "codex":
		return CodexTurnCompleted
	case "claude", "copilot":
		return ClaudeResult
	}
	return OpenCodeStepFinish + " with a finish reason"
}

func lastN(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
