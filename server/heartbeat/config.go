package heartbeat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentproof/agentproof/api"
)

// AgentConfig is what the heartbeat runner reads from an agent's adapterConfig (board
// operation create_agent). An agent whose adapterConfig has no driver is not run by
// the heartbeat runner (its wakes are left to whoever opens runs for it: a harness, a
// test, the conformance suite). The JSON object:
//
//	{
//	  "driver":        "reference",        // package agent's driver names (agent.New)
//	  "driverConfig":  {…},                // that driver's configuration (timeoutMs, …)
//	  "env":           {"NAME": <SecretRef> | "literal"},
//	  "builtin":       {…},                // agent.BuiltinConfig of reference / wrong
//	  "environmentId": "…",                // default: the company's local environment
//	  "cwd":           "/abs/workspace",   // default: the environment's config.workspace,
//	                                       // else <home>/workspaces/<company>
//	  "lifecycleMode": "per_turn"          // the only mode: one process per run
//	}
//
// Secret references in env (and in an exec driver's driverConfig.env) are resolved
// only when a run launches, into the child's environment; values are never stored.
type AgentConfig struct {
	Driver        string                     `json:"driver"`
	DriverConfig  map[string]any             `json:"driverConfig"`
	Env           map[string]json.RawMessage `json:"env"`
	Builtin       json.RawMessage            `json:"builtin"`
	EnvironmentID string                     `json:"environmentId"`
	Cwd           string                     `json:"cwd"`
	LifecycleMode string                     `json:"lifecycleMode"`
}

// EnvValue is one environment variable of an agent or environment: a literal Value or
// a secret Ref to resolve at launch.
type EnvValue struct {
	Value string
	Ref   *api.SecretRef
}

// parseAgentConfig decodes an adapterConfig. ok is false when it names no driver (the
// agent is not the runner's). Problems are collected into one error.
func parseAgentConfig(raw json.RawMessage) (cfg AgentConfig, ok bool, err error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		return AgentConfig{}, false, nil
	}
	var probe struct {
		Driver *string `json:"driver"`
	}
	if json.Unmarshal(raw, &probe) != nil || probe.Driver == nil {
		return AgentConfig{}, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, true, fmt.Errorf("adapterConfig: %w", err)
	}
	var p []string
	if cfg.Driver == "" {
		p = append(p, "driver must not be empty")
	}
	if cfg.LifecycleMode != "" && cfg.LifecycleMode != "per_turn" {
		p = append(p, fmt.Sprintf("lifecycleMode %q is not supported (per_turn only)", cfg.LifecycleMode))
	}
	if cfg.Cwd != "" && !filepath.IsAbs(cfg.Cwd) {
		p = append(p, fmt.Sprintf("cwd %q must be an absolute path", cfg.Cwd))
	}
	if len(p) > 0 {
		return cfg, true, fmt.Errorf("adapterConfig: %s", strings.Join(p, "; "))
	}
	return cfg, true, nil
}

// envValues decodes an env map: each value is a SecretRef object or a string.
func envValues(m map[string]json.RawMessage, where string) (map[string]EnvValue, error) {
	out := map[string]EnvValue{}
	var p []string
	for name, raw := range m {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			out[name] = EnvValue{Value: s}
			continue
		}
		var ref api.SecretRef
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ref); err != nil || ref.Type != api.SecretRefType || ref.SecretID == "" {
			p = append(p, fmt.Sprintf("%s.%s must be a string or a secret reference", where, name))
			continue
		}
		out[name] = EnvValue{Ref: &ref}
	}
	if len(p) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(p, "; "))
	}
	return out, nil
}

// driverEnv returns the exec driver's driverConfig.env as EnvValues (nil when absent).
func driverEnv(cfg map[string]any) (map[string]EnvValue, error) {
	raw, ok := cfg["env"]
	if !ok {
		return nil, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("driverConfig.env must be an object")
	}
	return envValues(m, "driverConfig.env")
}

// environmentConfig is what the runner reads from a local environment's config.
type environmentConfig struct {
	Workspace string                     `json:"workspace"`
	EnvVars   map[string]json.RawMessage `json:"envVars"`
}
