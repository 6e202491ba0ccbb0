package agent

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentproof/agentproof/agent/driver"
)

// realPlan is the command line, environment, directories and files of a real ACP
// agent's session in dir, whose scripted model is at modelURL (docs/acp.md "Agents").
// confined is a process launched inside a sandbox lease (ACPEnv.Launch): an agent's own
// command sandbox, which needs user namespaces the lease does not allow, is then off
// (Codex: sandbox_mode danger-full-access; its approvals stay on).
func (d *ACPDriver) realPlan(env RunEnv, dir, modelURL string, confined bool) (cliPlan, error) {
	p := cliPlan{files: map[string][]byte{}}
	switch d.agent {
	case driver.ACPOpenCode:
		p.args = []string{"acp"}
		p.env = append(p.env, ScriptedAPIKeyVar+"="+ScriptedAPIKey, "OPENCODE_CONFIG_CONTENT="+OpenCodeACPConfig(modelURL))
		p.env = append(p.env, OpenCodeOfflineEnv...)
		p.openCodeConfigDir(filepath.Join(dir, "xdg", "config", "opencode"))
	case driver.ACPCodex:
		codexHome := filepath.Join(dir, "codex-home")
		p.dirs = append(p.dirs, codexHome)
		p.env = append(p.env, "CODEX_HOME="+codexHome, ScriptedAPIKeyVar+"="+ScriptedAPIKey)
		mode := CodexSandboxWorkspaceWrite
		if confined {
			mode = CodexSandboxNone
		}
		p.args = CodexACPArgs(modelURL, CodexACPModel, ScriptedAPIKeyVar, mode)
	case driver.ACPClaude:
		cfgDir := filepath.Join(dir, "claude")
		p.dirs = append(p.dirs, cfgDir)
		p.env = append(p.env, "CLAUDE_CONFIG_DIR="+cfgDir, "ANTHROPIC_BASE_URL="+strings.TrimSuffix(modelURL, "/v1"),
			"ANTHROPIC_API_KEY="+ScriptedAPIKey, "ANTHROPIC_MODEL="+ScriptedModelID, "ANTHROPIC_SMALL_FAST_MODEL="+ScriptedModelID)
		p.env = append(p.env, ClaudeOfflineEnv...)
	case driver.ACPGemini:
		home := filepath.Join(dir, "home")
		p.files[filepath.Join(home, ".gemini", "settings.json")] = GeminiSettings()
		p.dirs = append(p.dirs, filepath.Join(home, ".gemini"))
		p.env = append(p.env, "GEMINI_API_KEY="+ScriptedAPIKey, "GOOGLE_GEMINI_BASE_URL="+strings.TrimSuffix(modelURL, "/v1"),
			"GEMINI_CLI_NO_RELAUNCH=true", "GEMINI_SANDBOX=false", "GEMINI_CLI_TRUST_WORKSPACE=true")
		p.args = []string{"--acp", "--model", ScriptedModelID}
	default:
		return cliPlan{}, fmt.Errorf("agent: %s: not supported yet", d.Name())
	}
	return p, nil
}

// OpenCodeACPConfig is OPENCODE_CONFIG_CONTENT for `opencode acp`: the provider
// "agentproof" on the scripted model through Chat Completions (its key read from
// ScriptedAPIKeyVar), sharing and autoupdate off, web fetches denied, and edits and
// shell commands set to "ask", so that OpenCode asks the ACP client before it writes a
// file or runs a command. The MCP server comes from session/new, not from here.
func OpenCodeACPConfig(modelURL string) string {
	b, _ := json.Marshal(openCodeBase("@ai-sdk/openai-compatible", modelURL, ScriptedModelID, ScriptedAPIKeyVar, "ask"))
	return string(b)
}

// CodexACPModel is the model id codex-acp asks the scripted model for: a slug Codex
// 0.16's model catalog knows, so that Codex has model metadata (with an unknown slug it
// reports "Model metadata … not found" as an agent message, which would pollute the
// turn's message) and offers its full tool set (apply_patch besides exec_command). The
// scripted model serves any model id.
const CodexACPModel = "gpt-5.3-codex"

// CodexACPArgs is the argv (after the program) of codex-acp against a custom Responses
// provider at modelURL: the same provider, telemetry and plugin settings as the exec
// driver (CodexArgs), but with approvals on ("untrusted": every command that is not
// known to be read-only is sent to the client as a permission request) and Codex's own
// command sandbox sandboxMode (CodexSandboxWorkspaceWrite on the host; CodexSandboxNone
// inside a sandbox lease, whose bubblewrap forbids the user namespaces Codex's own
// bubblewrap needs: the lease is the confinement).
func CodexACPArgs(modelURL, model, keyVar, sandboxMode string) []string {
	return []string{
		"-c", "model_provider=agentproof_model",
		"-c", fmt.Sprintf(`model_providers.agentproof_model={name="agentproof model",base_url=%s,env_key=%s,wire_api="responses",request_max_retries=0,stream_max_retries=0}`, strconv.Quote(modelURL), strconv.Quote(keyVar)),
		"-c", "model=" + strconv.Quote(model),
		"-c", `approval_policy="untrusted"`, "-c", "sandbox_mode=" + strconv.Quote(sandboxMode),
		"-c", "analytics.enabled=false", "-c", "feedback.enabled=false",
		"-c", "check_for_update_on_startup=false", "-c", `otel.exporter="none"`,
		"-c", "features.plugins=false", "-c", "features.shell_snapshot=false",
	}
}

// Codex's sandbox modes (its sandbox_mode setting) the ACP driver uses.
const (
	CodexSandboxWorkspaceWrite = "workspace-write"
	CodexSandboxNone           = "danger-full-access"
)

// GeminiSettings is ~/.gemini/settings.json for Gemini CLI: API-key authentication,
// usage statistics, telemetry and update checks off.
func GeminiSettings() []byte {
	b, _ := json.MarshalIndent(map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general":   map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
	}, "", "  ")
	return append(b, '\n')
}
