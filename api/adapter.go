package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/agent/driver"
)

// AdapterConfig is an agent's adapter configuration (CreateAgentRequest.AdapterConfig)
// as the heartbeat runner of package server reads it. An agent whose configuration has
// no driver key is not the runner's (its wakes are left to whoever opens runs for it).
// The JSON object:
//
//	{
//	  "driver":        "reference",        // a driver string (package agent/driver)
//	  "driverConfig":  {…},                // DriverConfig
//	  "env":           {"NAME": <SecretRef> | "literal"},
//	  "builtin":       {…},                // agent.BuiltinConfig of reference, wrong, leaky
//	  "environmentId": "…",                // default: the company's local environment
//	  "cwd":           "/abs/workspace",   // default: the environment's config.workspace,
//	                                       // else <home>/workspaces/<company>
//	  "lifecycleMode": "per_turn",         // or "warm" (acp:<agent> drivers only)
//	  "loginHome":     true                // exec only: HOME is the company's login HOME
//	}
//
// LoginHome makes the runner launch the agent with HOME = the company-scoped HOME a
// login file was seeded into (package loginfile: <home>/login-homes/<company>), which
// must exist as a directory of mode 0700 that is no symbolic link; the configuration
// holds neither the path nor the file (docs/secrets.md "Login files"). Only the exec
// driver takes it, and only in a local environment.
//
// Secret references in env (and in DriverConfig.Env) are resolved only when a run
// launches, into the child's environment; values are never stored. Builtin stays raw
// JSON here: package agent decodes and checks it (agent.ParseBuiltinConfig) when it
// launches a built-in agent.
type AdapterConfig struct {
	Driver        driver.Name         `json:"driver"`
	DriverConfig  *DriverConfig       `json:"driverConfig,omitempty"`
	Env           map[string]EnvValue `json:"env,omitempty"`
	Builtin       json.RawMessage     `json:"builtin,omitempty"`
	EnvironmentID string              `json:"environmentId,omitempty"`
	Cwd           string              `json:"cwd,omitempty"`
	LifecycleMode LifecycleMode       `json:"lifecycleMode,omitempty"`
	LoginHome     bool                `json:"loginHome,omitempty"`
}

// LifecycleMode is AdapterConfig.LifecycleMode.
type LifecycleMode string

// Lifecycle modes (seed: runnerLifecycleMode). LifecyclePerTurn: one agent process
// per run ("" means it too). LifecycleWarm: one agent process and one session serve
// every run of the agent, each run a new prompt in the same session, until the server
// shuts down (docs/acp.md "Warm lifecycle"); only session drivers (acp:<agent>,
// rpc:<agent>, app:<agent>) have it.
const (
	LifecyclePerTurn LifecycleMode = "per_turn"
	LifecycleWarm    LifecycleMode = "warm"
)

// Warm reports whether m is the warm lifecycle.
func (m LifecycleMode) Warm() bool { return m == LifecycleWarm }

// DriverConfig is a driver's configuration (a catalog profile's driverConfig as the
// harness passes it on). Which keys a driver reads (package agent refuses the others):
//
//   - every driver: TimeoutMs (ms, > 0) and MaxOutputBytes (bytes, 1..worker.MaxOutputBytes);
//     nil means the driver's default;
//   - wrong: Strategy ("wrong_nonce", the default);
//   - exec: Command (absolute path), Args (templates over agent.ExecVars) and Env (the
//     variables it binds to secret references);
//   - exec:<cli>: Binary (the CLI's absolute native binary, set by the harness from the
//     agents cache), ModelBaseURL (the scripted model's loopback root URL, unless live),
//     Live (the live provider, `agentproof run --live`) and Script (the model script the
//     harness derives: oracle, nop or wrong; the driver itself ignores it) and
//     ResultGraceMs (ms the CLI may take to exit after its terminal event), Model (the
//     model id the CLI asks the scripted model for; default "scripted-model": the
//     generated model-breadth profiles set their ranked model's id, docs/breadth.md)
//     and Node (the Node.js binary that runs a JavaScript CLI's entry script, binary);
//   - acp:<agent> (docs/acp.md): TurnTimeoutMs (one prompt turn, ms), StartTimeoutMs
//     (process, initialize and session/new, ms), CancelGraceMs (how long a turn may take
//     to end after session/cancel, ms), ClientFS (offer the workspace-confined fs
//     capability; default on, off for gemini) and, for the real agents, Binary, Node
//     (the absolute path of Node.js for a JavaScript agent), ModelBaseURL and Script;
//   - rpc:pi (docs/pi.md): the ACP driver's timeouts, Binary, Node, ModelBaseURL,
//     Script, Model and GateTools (the Pi tools whose calls ask permission first; an
//     empty list turns the gate off; nil means write and edit);
//   - app:codex (docs/clis.md): the ACP driver's timeouts, Binary, ModelBaseURL,
//     Script, Model, ApprovalPolicy (Codex's approval policy of the thread: untrusted,
//     the default, or on-request) and SandboxMode (Codex's own sandbox of the thread:
//     workspace-write, the default on the host, read-only or danger-full-access);
//   - app:claude (docs/clis.md): the ACP driver's timeouts, Binary, ModelBaseURL,
//     Script, Model and PermissionMode (Claude Code's permission mode: default, which
//     asks before every command and file edit, or bypassPermissions, which asks
//     nothing: the calibration twin that acts without asking).
type DriverConfig struct {
	TimeoutMs      *int64              `json:"timeoutMs,omitempty"`
	MaxOutputBytes *int64              `json:"maxOutputBytes,omitempty"`
	Strategy       string              `json:"strategy,omitempty"`
	Command        string              `json:"command,omitempty"`
	Args           []string            `json:"args,omitempty"`
	Env            map[string]EnvValue `json:"env,omitempty"`
	Binary         string              `json:"binary,omitempty"`
	ModelBaseURL   string              `json:"modelBaseUrl,omitempty"`
	Live           *LiveProvider       `json:"live,omitempty"`
	Script         string              `json:"script,omitempty"`
	ResultGraceMs  *int64              `json:"resultGraceMs,omitempty"`
	TurnTimeoutMs  *int64              `json:"turnTimeoutMs,omitempty"`
	StartTimeoutMs *int64              `json:"startTimeoutMs,omitempty"`
	CancelGraceMs  *int64              `json:"cancelGraceMs,omitempty"`
	ClientFS       *bool               `json:"clientFs,omitempty"`
	Model          string              `json:"model,omitempty"`
	Node           string              `json:"node,omitempty"`
	GateTools      *[]string           `json:"gateTools,omitempty"`
	ApprovalPolicy string              `json:"approvalPolicy,omitempty"`
	SandboxMode    string              `json:"sandboxMode,omitempty"`
	PermissionMode string              `json:"permissionMode,omitempty"`
}

// LiveProvider is the live model endpoint of a CLI profile (DriverConfig.Live), used
// only with `agentproof run --live`: BaseURL (the OpenAI- or Anthropic-style base URL),
// Model (the provider's model id), Credential (the catalog credential whose value the
// harness stores as a secret and binds to the agent's environment under the same name)
// and, for OpenCode, NPM (the AI SDK package that selects the wire format; default
// @ai-sdk/openai).
type LiveProvider struct {
	BaseURL    string `json:"baseUrl"`
	Model      string `json:"model"`
	Credential string `json:"envVar"`
	NPM        string `json:"npm,omitempty"`
}

// EnvValue is one environment variable of an agent or environment: a literal Value or
// a secret Ref to resolve at launch. Its JSON form is a string or a SecretRef object.
type EnvValue struct {
	Value string
	Ref   *SecretRef
}

// MarshalJSON encodes the SecretRef object, or the literal string.
func (v EnvValue) MarshalJSON() ([]byte, error) {
	if v.Ref != nil {
		return json.Marshal(v.Ref)
	}
	return json.Marshal(v.Value)
}

// UnmarshalJSON decodes a string or a SecretRef (exactly type "secret_ref", a
// non-empty secretId and an optional version; no other keys).
func (v *EnvValue) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*v = EnvValue{Value: s}
		return nil
	}
	var ref SecretRef
	if err := strictDecode(b, &ref); err != nil || ref.Type != SecretRefType || ref.SecretID == "" {
		return errors.New("must be a string or a secret reference {type: secret_ref, secretId, version}")
	}
	*v = EnvValue{Ref: &ref}
	return nil
}

// UnmarshalJSON decodes a DriverConfig, refusing unknown keys by name.
func (c *DriverConfig) UnmarshalJSON(b []byte) error {
	type plain DriverConfig
	return strictObject(b, (*plain)(c))
}

// UnmarshalJSON decodes a LiveProvider, refusing unknown keys by name.
func (p *LiveProvider) UnmarshalJSON(b []byte) error {
	type plain LiveProvider
	return strictObject(b, (*plain)(p))
}

// ParseAdapterConfig decodes an adapter configuration strictly: ok is false (and err
// nil) when raw is absent, null, not an object or has no driver key — the agent is not
// the heartbeat runner's. Otherwise every problem is reported together in one error
// naming the key: an unknown key (at any level of driverConfig), a value of the wrong
// type, an unknown or empty driver, an env value that is neither a string nor a secret
// reference, a relative cwd, a lifecycleMode other than per_turn and warm, warm for a
// driver without sessions (only acp:<agent> has them).
func ParseAdapterConfig(raw json.RawMessage) (cfg AdapterConfig, ok bool, err error) {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil || top == nil {
		return AdapterConfig{}, false, nil
	}
	if _, has := top["driver"]; !has {
		return AdapterConfig{}, false, nil
	}
	problems := objectProblems(raw, &cfg)
	p := problemList(problems)
	if _, bad := problems["driver"]; !bad && cfg.Driver.IsZero() {
		p = append(p, "driver must not be empty")
	}
	switch cfg.LifecycleMode {
	case "", LifecyclePerTurn:
	case LifecycleWarm:
		if !cfg.Driver.Warmable() && !cfg.Driver.IsZero() {
			p = append(p, fmt.Sprintf("lifecycleMode %q needs a session driver (%s<agent>, %s<agent> or %s<agent>); driver %s runs one process per run", cfg.LifecycleMode, driver.KindACP, driver.KindRPC, driver.KindApp, cfg.Driver))
		}
	default:
		p = append(p, fmt.Sprintf("lifecycleMode %q is not supported (%s or %s)", cfg.LifecycleMode, LifecyclePerTurn, LifecycleWarm))
	}
	if cfg.Cwd != "" && !filepath.IsAbs(cfg.Cwd) {
		p = append(p, fmt.Sprintf("cwd %q must be an absolute path", cfg.Cwd))
	}
	if len(p) > 0 {
		return cfg, true, fmt.Errorf("adapterConfig: %s", strings.Join(p, "; "))
	}
	return cfg, true, nil
}

// DriverConfigOf converts a catalog profile's driverConfig (YAML-decoded, free-form)
// into a DriverConfig with the same strict rules (unknown keys and wrong types are
// errors naming the key). Nil and empty maps give the zero DriverConfig.
func DriverConfigOf(m map[string]any) (DriverConfig, error) {
	var c DriverConfig
	if len(m) == 0 {
		return c, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return c, fmt.Errorf("driverConfig: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return DriverConfig{}, fmt.Errorf("driverConfig: %w", unwrapJSON(err))
	}
	return c, nil
}

// strictObject decodes the JSON object b into dst (a pointer to a struct whose fields
// have json tags), reporting every unknown key by name and every wrongly typed value by
// its key, together.
func strictObject(b []byte, dst any) error {
	if p := problemList(objectProblems(b, dst)); len(p) > 0 {
		return errors.New(strings.Join(p, "; "))
	}
	return nil
}

// objectProblems decodes the JSON object b into dst key by key and returns the
// problem of each key that is unknown or does not decode ("" for b itself when it is
// not an object).
func objectProblems(b []byte, dst any) map[string]string {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil || top == nil {
		return map[string]string{"": "must be a JSON object"}
	}
	v := reflect.ValueOf(dst).Elem()
	fields := jsonFields(v.Type())
	out := map[string]string{}
	for k, raw := range top {
		f, known := fields[k]
		if !known {
			out[k] = fmt.Sprintf("unknown key %q (known: %s)", k, strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
			continue
		}
		if err := json.Unmarshal(raw, v.FieldByIndex(f).Addr().Interface()); err != nil {
			out[k] = fmt.Sprintf("%s: %v", k, unwrapJSON(err))
		}
	}
	return out
}

// problemList lists problems in key order.
func problemList(problems map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(problems)) {
		out = append(out, problems[k])
	}
	return out
}

// strictDecode decodes one JSON value into v with unknown fields refused.
func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

// jsonFields maps each json key of struct type t to its field index.
func jsonFields(t reflect.Type) map[string][]int {
	out := map[string][]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = f.Index
		}
	}
	return out
}

// unwrapJSON shortens a type error of encoding/json to what the value should have
// been ("cannot unmarshal string into int64"); other errors pass unchanged.
func unwrapJSON(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("a JSON %s cannot be a %s", te.Value, te.Type)
	}
	return err
}
