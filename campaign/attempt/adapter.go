package attempt

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign"
)

// agentInput is what the agent's adapter configuration needs besides the fixture
// records: the workspace, the scripted model's URL (offline CLI cells), the pinned CLI
// (CLI cells; a zero Binary means not installed) and whether the campaign runs live.
type agentInput struct {
	workspace string
	modelURL  string
	cli       PinnedCLI
	live      bool
}

// agentInput collects the agent's adapter inputs from the provisioned attempt.
func (x *LocalExecutor) agentInput(plan campaign.AttemptPlan, p *Provisioned) agentInput {
	in := agentInput{workspace: p.Workspace, live: x.Live}
	if p.Model != nil {
		in.modelURL = p.Model.running.URL
	}
	if name, isCLI := cliName(plan.Cell.Profile.Driver); isCLI {
		in.cli = x.CLIs[name]
	}
	return in
}

// liveCredential is the credential of the profile's live provider when the campaign
// runs live, or "".
func (x *LocalExecutor) liveCredential(plan campaign.AttemptPlan) string {
	if !x.Live {
		return ""
	}
	if _, isCLI := cliName(plan.Cell.Profile.Driver); !isCLI {
		return ""
	}
	live, _ := plan.Cell.Profile.DriverConfig[agent.CLIKeyLive].(map[string]any)
	c, _ := live["envVar"].(string)
	return c
}

// adapterConfig is the agent's adapter configuration for the heartbeat runner: the
// profile's driver and driver configuration, every stored secret (the canary, the
// credentials) as a secret reference in env, the workspace as cwd and, for reference,
// wrong and leaky, the rendered reference script (agent.BuiltinConfig, schema
// agentproof.builtin-agent-config/v1). Errors (a CLI not installed, no live provider
// for --live, no reference script) are the harness's configuration faults.
func adapterConfig(plan campaign.AttemptPlan, in agentInput, secretIDs map[string]string, environmentID string) (json.RawMessage, error) {
	p := plan.Cell.Profile
	env := map[string]any{}
	for name, id := range secretIDs {
		env[name] = api.SecretRef{Type: api.SecretRefType, SecretID: id, Version: "latest"}
	}
	cfg := map[string]any{"driver": p.Driver, "env": env, "environmentId": environmentID, "cwd": in.workspace, "lifecycleMode": "per_turn"}
	dc := maps.Clone(p.DriverConfig)
	delete(dc, "strategy") // the wrong agent's strategy is the driver's own; not a driver option
	if name, isCLI := cliName(p.Driver); isCLI {
		if dc == nil {
			dc = map[string]any{}
		}
		if err := cliDriverConfig(dc, name, p.ID, in); err != nil {
			return nil, err
		}
	}
	if len(dc) > 0 {
		cfg["driverConfig"] = dc
	}
	if slices.Contains([]string{"reference", "wrong", "leaky"}, p.Driver) {
		if plan.Case.Reference == nil {
			return nil, fmt.Errorf("case %s has no reference script for the %s agent", plan.Cell.Case.ID, p.Driver)
		}
		cfg["builtin"] = map[string]any{"schema": "agentproof.builtin-agent-config/v1", "nonce": plan.Nonce, "reference": plan.Case.Reference}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding the adapter configuration: %w", err)
	}
	return b, nil
}

// cliDriverConfig completes a CLI driver's configuration dc: the pinned native binary,
// and either the live provider (kept) or the scripted model's URL (the live provider
// and the model script removed: they are the executor's concern).
func cliDriverConfig(dc map[string]any, name, profile string, in agentInput) error {
	if in.cli.Binary == "" {
		return fmt.Errorf("agent CLI %s is not installed: no native binary for profile %s (run: agentproof agents install %s)", name, profile, name)
	}
	dc[agent.CLIKeyBinary] = in.cli.Binary
	delete(dc, agent.CLIKeyScript)
	if in.live {
		if _, ok := dc[agent.CLIKeyLive]; !ok {
			return fmt.Errorf("profile %s has no live provider (driverConfig live) for --live", profile)
		}
		return nil
	}
	delete(dc, agent.CLIKeyLive)
	dc[agent.CLIKeyModelBaseURL] = in.modelURL
	return nil
}
