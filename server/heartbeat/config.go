package heartbeat

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/api"
)

// parseAgentConfig decodes an agent's adapterConfig (api.AdapterConfig, strictly:
// api.ParseAdapterConfig). ok is false when it names no driver (the agent is not the
// runner's). Problems are collected into one error naming each key.
func parseAgentConfig(raw json.RawMessage) (cfg api.AdapterConfig, ok bool, err error) {
	return api.ParseAdapterConfig(raw)
}

// envValues decodes an environment's envVars: each value is a string or a secret
// reference (api.EnvValue); every bad value is named.
func envValues(m map[string]json.RawMessage, where string) (map[string]api.EnvValue, error) {
	out := map[string]api.EnvValue{}
	var p []string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		var v api.EnvValue
		if err := json.Unmarshal(m[name], &v); err != nil {
			p = append(p, fmt.Sprintf("%s.%s %v", where, name, err))
			continue
		}
		out[name] = v
	}
	if len(p) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(p, "; "))
	}
	return out, nil
}

// environmentConfig is what the runner reads from an environment's config: a local
// environment's workspace and envVars; a sandbox environment's lease, the absolute path
// of the lease.json the campaign's provision stage wrote (read at every launch, so a
// retargeted bridge's new address is what the next launch listens on).
type environmentConfig struct {
	Workspace string                     `json:"workspace"`
	EnvVars   map[string]json.RawMessage `json:"envVars"`
	Lease     string                     `json:"lease"`
}
