package agent

import (
	"cmp"
	"encoding/json"
	"path/filepath"
	"strings"
)

// More real agent CLIs (docs/clis.md), each driven like the first three — its native
// binary (or `node <entry script>`) non-interactively with its JSON event stream on
// stdout, an explicit environment, per-run directories, the scripted model as a custom
// OpenAI-compatible provider, the agentproof MCP server in the CLI's own configuration:
//
//   - exec:kilo — Kilo CLI (@kilocode/cli), an OpenCode fork: `kilo run --format json`
//     with KILO_CONFIG_CONTENT (OpenCode's configuration) and OpenCode's event stream.
//   - exec:qwen — Qwen Code (@qwen-code/qwen-code): `qwen --auth-type openai --yolo -o
//     stream-json`, OPENAI_BASE_URL, MCP in ~/.qwen/settings.json; Claude Code's
//     stream-json events (result terminal, usage).
//   - exec:copilot — GitHub Copilot CLI (@github/copilot): BYOK offline mode
//     (COPILOT_OFFLINE, COPILOT_PROVIDER_BASE_URL), `copilot -p … --output-format json`,
//     MCP in COPILOT_HOME/mcp-config.json; its own events (result terminal; no token
//     usage in the stream).

// eventDialect is the event-stream family of cli: kilo streams OpenCode's events and
// qwen Claude Code's; the others are their own.
func eventDialect(cli string) string {
	switch cli {
	case "kilo":
		return "opencode"
	case "qwen":
		return "claude"
	}
	return cli
}

// CopilotResult is Copilot CLI's terminal event (`result`, with exitCode).
const CopilotResult = "result"

// KiloOfflineEnv are OpenCode's offline variables under Kilo's names.
var KiloOfflineEnv = []string{
	"KILO_DISABLE_AUTOUPDATE=1", "KILO_DISABLE_MODELS_FETCH=1", "KILO_DISABLE_LSP_DOWNLOAD=1",
	"KILO_DISABLE_DEFAULT_PLUGINS=1", "KILO_DISABLE_SHARE=1", "KILO_DISABLE_CLAUDE_CODE=1",
	"KILO_DISABLE_EXTERNAL_SKILLS=1", "KILO_DISABLE_SESSION_INGEST=1", "KILO_DISABLE_CODEBASE_INDEXING=1",
}

// CopilotOfflineEnv keeps Copilot CLI off the network: offline mode (no GitHub
// authentication, telemetry, web tools, GitHub MCP server or auto-update; it needs the
// BYOK provider) and no auto-update.
var CopilotOfflineEnv = []string{"COPILOT_OFFLINE=true", "COPILOT_AUTO_UPDATE=false"}

// mcpEnvRefs maps each of vars to a reference to the same variable in the CLI's own
// environment, in the syntax prefix+VAR+suffix (the value never lands in a file).
func mcpEnvRefs(vars []string, prefix, suffix string) map[string]string {
	out := map[string]string{}
	for _, v := range vars {
		out[v] = prefix + v + suffix
	}
	return out
}

// QwenSettings is Qwen Code's ~/.qwen/settings.json: the agentproof MCP server (trusted,
// its environment as $VAR references expanded by Qwen Code), usage statistics and
// telemetry off.
func QwenSettings(executable string, mcpVars []string) []byte {
	b, _ := json.MarshalIndent(map[string]any{
		"mcpServers": map[string]any{MCPServerName: map[string]any{
			"command": executable, "args": []string{"mcp"}, "env": mcpEnvRefs(mcpVars, "$", ""), "trust": true, "timeout": 120000, "alwaysLoadTools": true,
		}},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
	}, "", "  ")
	return append(b, '\n')
}

// CopilotMCPConfig is Copilot CLI's COPILOT_HOME/mcp-config.json: the local server
// `<executable> mcp` with every tool allowed and its environment as ${VAR} references.
func CopilotMCPConfig(executable string, mcpVars []string) []byte {
	b, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{MCPServerName: map[string]any{
		"type": "local", "command": executable, "args": []string{"mcp"}, "env": mcpEnvRefs(mcpVars, "${", "}"), "tools": []string{"*"},
	}}}, "", "  ")
	return append(b, '\n')
}

// liveKey is the provider key a CLI reads under its own variable: the scripted model's
// placeholder, or the live credential's resolved value.
func (d cliDriver) liveKey(env RunEnv, keyVar string) string {
	if d.modelURL != "" {
		return ScriptedAPIKey
	}
	return env.Secrets[keyVar]
}

// morePlan fills p for the CLIs of this file (see plan).
func (d cliDriver) morePlan(p *cliPlan, dir, modelURL, model, keyVar string, env RunEnv, mcpVars []string, prompt string) {
	home := filepath.Join(dir, "home")
	switch d.cli {
	case "kilo":
		npm := "@ai-sdk/openai-compatible"
		if d.live != nil && d.modelURL == "" {
			npm = cmp.Or(d.live.NPM, npm)
		}
		p.env = append(p.env, "KILO_CONFIG_CONTENT="+OpenCodeConfig(npm, modelURL, model, keyVar, env.Executable, mcpVars))
		p.env = append(p.env, KiloOfflineEnv...)
		p.args = []string{"run", "--format", "json", "-m", "agentproof/" + model, prompt}
	case "qwen":
		p.dirs = append(p.dirs, filepath.Join(home, ".qwen"))
		p.files[filepath.Join(home, ".qwen", "settings.json")] = QwenSettings(env.Executable, mcpVars)
		p.env = append(p.env, "OPENAI_BASE_URL="+modelURL, "OPENAI_API_KEY="+d.liveKey(env, keyVar), "OPENAI_MODEL="+model,
			"QWEN_CODE_SUPPRESS_YOLO_WARNING=1", "QWEN_SANDBOX=false")
		p.args = []string{"--auth-type", "openai", "-m", model, "--yolo", "-o", "stream-json", prompt}
	case "copilot":
		cpHome := filepath.Join(dir, "copilot")
		p.dirs = append(p.dirs, cpHome)
		p.files[filepath.Join(cpHome, "mcp-config.json")] = CopilotMCPConfig(env.Executable, mcpVars)
		p.env = append(p.env, "COPILOT_HOME="+cpHome, "COPILOT_PROVIDER_BASE_URL="+modelURL, "COPILOT_PROVIDER_API_KEY="+d.liveKey(env, keyVar),
			"COPILOT_MODEL="+model)
		p.env = append(p.env, CopilotOfflineEnv...)
		p.args = []string{"-p", prompt, "--allow-all-tools", "--output-format", "json", "--disable-client-telemetry", "--no-auto-update"}
	}
}

// copilot reads one Copilot CLI event: assistant messages (model turns, final text, MCP
// tool requests) and errors. Its stream reports no token usage.
func (ev *CLIEvents) copilot(m map[string]any) {
	t, _ := m["type"].(string)
	data := obj(m["data"])
	switch {
	case t == "assistant.message":
		ev.ModelTurns++
		if c := str(data["content"]); c != "" {
			ev.FinalText = c
		}
		for _, r := range sliceOf(data["toolRequests"]) {
			if name := str(obj(r)["name"]); strings.Contains(name, MCPServerName) {
				ev.ToolCalls = append(ev.ToolCalls, name)
			}
		}
	case strings.HasSuffix(t, ".error") || t == "session.error":
		ev.Errors = append(ev.Errors, cmp.Or(str(data["message"]), t))
	case t == CopilotResult && num(m["exitCode"]) != 0:
		ev.Errors = append(ev.Errors, "copilot exited "+str(m["exitCode"]))
	}
}
