package agent

import (
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/api"
)

// The Pi driver (docs/pi.md): rpc:pi runs Pi (@mariozechner/pi-coding-agent) in its RPC
// mode — newline-delimited JSON commands on stdin, responses and events on stdout — as
// one long-lived process per session (warm by default: every prompt of a case goes to
// the same process), against the scripted model through a custom OpenAI-compatible
// provider (offline, no key). It is a protocol of the session layer (pi_session.go):
// Start returns a session.Session; its Prompt sends one turn, its Steer and FollowUp
// deliver messages while a turn runs, its Cancel is the native Stop (Pi's abort).
// Permissions (agentproof's Pi extension asks before every write or edit through Pi's
// confirm dialog) and Pi's native questions (the extension's ask_user tool: select,
// confirm, input, editor) go to the layer's deciders, and every RPC line, both ways,
// is recorded as evidence (the session log with schema PiLogSchema).

// PiDriverName is the driver string of the Pi driver.
const PiDriverName = "rpc:pi"

// Pi driver configuration keys (driverConfig of an rpc:pi profile), besides timeoutMs
// (the whole session's life, ms), maxOutputBytes (Pi's stdout, bytes), turnTimeoutMs,
// startTimeoutMs and cancelGraceMs (ACPKey*), binary (Pi's cli.js), node, modelBaseUrl,
// script and model (CLIKey*).
const (
	// PiKeyGateTools lists the Pi tools whose calls ask permission first (default
	// write and edit; an empty list turns the gate off).
	PiKeyGateTools = "gateTools"
)

// Defaults of the Pi driver.
const (
	// DefaultPiMaxOutputBytes bounds Pi's stdout when driverConfig sets no
	// maxOutputBytes: Pi streams every partial message, so a turn's events add up.
	DefaultPiMaxOutputBytes = 64 << 20
	// PiQuestionTool is the extension's native-question tool.
	PiQuestionTool = "ask_user"
	// PiToolPrefix starts the name of every semantic tool in Pi (agentproof_finish_task).
	PiToolPrefix = MCPServerName + "_"
)

// DefaultPiGateTools are the Pi tools that ask permission unless driverConfig says
// otherwise.
var DefaultPiGateTools = []string{"write", "edit"}

// piTools are Pi's built-in tools (a gate may name only these).
var piTools = []string{"read", "bash", "edit", "write", "grep", "find", "ls"}

//go:embed pi_extension.js
var piExtension []byte

// PiExtension returns agentproof's Pi extension (the JavaScript file the driver writes
// into each session's directory).
func PiExtension() []byte { return slices.Clone(piExtension) }

// PiDriver starts Pi sessions. It is immutable and safe for concurrent use.
type PiDriver struct {
	model  string
	gate   []string
	bounds bounds
	sessionSettings
}

// NewPi returns the Pi driver configured by config (the profile's driverConfig):
// TimeoutMs (the whole session's life, ms), MaxOutputBytes (Pi's stdout, bytes;
// default DefaultPiMaxOutputBytes), TurnTimeoutMs, StartTimeoutMs, CancelGraceMs (ms,
// > 0), Binary and Node (absolute paths), ModelBaseURL (a loopback http URL), Script
// (oracle, nop or wrong), Model (the model id Pi asks for) and GateTools (the Pi tools
// that ask permission; an empty list turns the gate off). A key the driver does not
// read and a value out of range are a *ConfigError listing every problem.
func NewPi(config api.DriverConfig) (*PiDriver, error) {
	ce := &ConfigError{Driver: PiDriverName}
	d := &PiDriver{gate: DefaultPiGateTools, sessionSettings: defaultSessionSettings()}
	d.bounds = parseBounds(config, driver.Name{Kind: driver.KindRPC, Arg: "pi"}, ce, []string{ACPKeyTurnTimeout, ACPKeyStartTimeout, ACPKeyCancelGrace,
		CLIKeyBinary, ACPKeyNode, CLIKeyModelBaseURL, CLIKeyScript, CLIKeyModel, PiKeyGateTools})
	if config.MaxOutputBytes == nil {
		d.bounds.maxOutput = DefaultPiMaxOutputBytes
	}
	d.sessionSettings.parse(config, ce)
	d.model = modelID(config, ScriptedModelID, ce)
	if config.GateTools != nil {
		d.gate = []string{}
		for _, t := range *config.GateTools {
			if !slices.Contains(piTools, t) {
				ce.Problems = append(ce.Problems, fmt.Sprintf("%s: %s is not a Pi tool (%s)", PiKeyGateTools, t, strings.Join(piTools, ", ")))
				continue
			}
			d.gate = append(d.gate, t)
		}
	}
	if len(ce.Problems) > 0 {
		return nil, ce
	}
	return d, nil
}

// Name is the driver string, "rpc:pi".
func (d *PiDriver) Name() string { return PiDriverName }

// PiSessionDir is the directory of Pi session n (1-based) below an agent's state
// directory: STATE/pi-sessions/<n>. It holds the session's HOME (home/, with Pi's
// home/.pi/agent/models.json), XDG directories, TMPDIR (tmp/), the extension
// (agentproof-pi.js) and its configuration (agentproof-pi.json), and run-id.
func PiSessionDir(stateDir string, n int) string {
	return filepath.Join(stateDir, piSessions, strconv.Itoa(n))
}

// piSessions is the directory of an agent's Pi sessions below its state directory.
const piSessions = "pi-sessions"

// PiExtensionConfig is the extension's configuration (agentproof-pi.json): the gate
// (tools and the marker of its confirm titles), the question tool, and the MCP bridge
// (the agentproof MCP server's command and the tools it serves, registered in Pi under
// PiToolPrefix).
type PiExtensionConfig struct {
	Schema     string            `json:"schema"`
	Permission piGateConfig      `json:"permission"`
	Questions  piQuestionConfig  `json:"questions"`
	MCP        piMCPBridgeConfig `json:"mcp"`
}

type piGateConfig struct {
	Tools []string `json:"tools"`
	Nonce string   `json:"nonce"`
}

type piQuestionConfig struct {
	Tool string `json:"tool"`
}

type piMCPBridgeConfig struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Prefix  string   `json:"prefix"`
	Tools   []PiTool `json:"tools"`
}

// PiTool is one semantic tool the extension registers in Pi and proxies to the
// agentproof MCP server: the MCP tool's name, description and input schema (JSON
// Schema). The caller supplies them (package mcp's Tools; agent cannot import mcp).
type PiTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
}

// PiExtensionSchema tags the extension's configuration.
const PiExtensionSchema = "agentproof.pi-extension/v1"

// PiModelsJSON is Pi's ~/.pi/agent/models.json: one provider "agentproof" at modelURL
// (OpenAI Chat Completions, no key: the scripted model checks none) serving model.
func PiModelsJSON(modelURL, model string) []byte {
	b, _ := json.MarshalIndent(map[string]any{"providers": map[string]any{MCPServerName: map[string]any{
		"baseUrl": modelURL, "api": "openai-completions", "apiKey": ScriptedAPIKey,
		"models": []any{map[string]any{"id": model, "name": model, "reasoning": false, "input": []string{"text"},
			"contextWindow": 128000, "maxTokens": 4096, "cost": map[string]int{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}},
	}}}, "", "  ")
	return append(b, '\n')
}

// PiArgs is Pi's argv after the entry script: RPC mode, the agentproof provider and
// model, no session file, offline, no discovered extensions, skills, prompt templates,
// themes or context files, and agentproof's extension.
func PiArgs(model, extension string) []string {
	return []string{"--mode", "rpc", "--provider", MCPServerName, "--model", model, "--no-session", "--offline",
		"--no-extensions", "-e", extension, "--no-skills", "--no-prompt-templates", "--no-themes", "--no-context-files"}
}

// launch plans session n for env with the semantic tools (pure: the layer creates
// what it lists) and returns it with the nonce that marks the write gate's permission
// requests.
func (d *PiDriver) launch(env RunEnv, n int, tools []PiTool) (session.Launch, string, error) {
	if err := requireRun(env, true); err != nil {
		return session.Launch{}, "", err
	}
	if err := requireExecutable(env); err != nil {
		return session.Launch{}, "", err
	}
	if d.binary == "" || d.node == "" {
		return session.Launch{}, "", fmt.Errorf("agent: %s: no Pi entry script or Node.js configured (driverConfig binary and node; `agentproof agents install pi`)", d.Name())
	}
	if d.modelURL == "" {
		return session.Launch{}, "", fmt.Errorf("agent: %s: no model endpoint: driverConfig needs modelBaseUrl (the scripted model)", d.Name())
	}
	nonce := make([]byte, 12)
	if _, err := rand.Read(nonce); err != nil {
		return session.Launch{}, "", err
	}
	l, home, vars := d.bounds.sessionLaunch(env, piSessions, n)
	l.Dirs = append(l.Dirs, filepath.Join(home, ".pi", "agent"))
	l.Files[filepath.Join(home, ".pi", "agent", "models.json")] = PiModelsJSON(d.modelURL+"/runs/"+strconv.Itoa(n)+"/v1", d.model)
	ext := filepath.Join(l.Dir, "agentproof-pi.js")
	l.Files[ext] = PiExtension()
	cfg := PiExtensionConfig{Schema: PiExtensionSchema, Permission: piGateConfig{Tools: d.gate, Nonce: hex.EncodeToString(nonce)},
		Questions: piQuestionConfig{Tool: PiQuestionTool},
		MCP:       piMCPBridgeConfig{Command: env.Executable, Args: []string{"mcp"}, Prefix: PiToolPrefix, Tools: tools}}
	if cfg.MCP.Tools == nil {
		cfg.MCP.Tools = []PiTool{}
	}
	cfgJSON, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return session.Launch{}, "", fmt.Errorf("agent: %s: encoding the extension's configuration: %w", d.Name(), err)
	}
	cfgFile := filepath.Join(l.Dir, "agentproof-pi.json")
	l.Files[cfgFile] = append(cfgJSON, '\n')
	vars["PI_OFFLINE"], vars["AGENTPROOF_PI_CONFIG"] = "1", cfgFile
	if l.Spec.Env, err = sessionEnviron(vars, env.Secrets); err != nil {
		return session.Launch{}, "", err
	}
	l.Spec.Path, l.Spec.Args = d.node, append([]string{d.node, d.binary}, PiArgs(d.model, ext)...)
	return l, cfg.Permission.Nonce, nil
}
