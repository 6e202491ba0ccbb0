package attempt

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/catalog"
)

// agentInput is what the agent's adapter configuration needs besides the fixture
// records: the workspace, the scripted model's URL (offline CLI cells), the pinned CLI
// (CLI cells; a zero Binary means not installed) and whether the campaign runs live.
type agentInput struct {
	workspace string
	modelURL  string
	cli       PinnedCLI
	live      bool
	hostile   *agent.HostileTargets // a hostile suite agent's targets; nil otherwise
}

// agentInput collects the agent's adapter inputs from the provisioned attempt.
func (x *LocalExecutor) agentInput(plan campaign.AttemptPlan, p *Provisioned) agentInput {
	in := agentInput{workspace: p.Workspace, live: x.Live}
	if p.Instance != nil {
		in.hostile = p.Hostile.targets(p.Instance.pid())
	}
	if p.Model != nil {
		in.modelURL = p.Model.running.URL
	}
	if name, pinned := plan.Cell.Profile.Driver.Package(); pinned {
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
	return LiveCredential(plan.Cell)
}

// LiveCredential is the environment variable holding the credential of cell's live
// provider under `run --live` (its profile's driverConfig.live.envVar), or "" when the
// cell is no agent CLI cell or its profile declares no live provider.
func LiveCredential(cell *catalog.Cell) string {
	if _, isCLI := cell.Profile.Driver.CLI(); !isCLI {
		return ""
	}
	dc, err := api.DriverConfigOf(cell.Profile.DriverConfig)
	if err != nil || dc.Live == nil {
		return ""
	}
	return dc.Live.Credential
}

// adapterConfig is the agent's adapter configuration for the heartbeat runner
// (api.AdapterConfig): the profile's driver and driver configuration, every stored
// secret (the canary, the credentials) as a secret reference in env, the workspace as
// cwd and, for reference, wrong and leaky, the rendered reference script
// (agent.BuiltinConfig, schema agentproof.builtin-agent-config/v1), and the profile's
// runnerLifecycleMode (per_turn unless it says warm); a cell with a login file
// (catalog.Cell.LoginFile) gets loginHome instead of a reference to it. Errors (a driver
// configuration the api does not accept, a CLI not installed, no live provider for
// --live, no reference script) are the harness's configuration faults.
func adapterConfig(plan campaign.AttemptPlan, in agentInput, secretIDs map[string]string, environmentID string) (json.RawMessage, error) {
	p := plan.Cell.Profile
	d := p.Driver
	if d.IsZero() {
		return nil, fmt.Errorf("profile %s has no driver (the catalog was not validated)", p.ID)
	}
	dc, err := api.DriverConfigOf(p.DriverConfig)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", p.ID, err)
	}
	dc.Strategy = "" // the wrong agent's strategy is the driver's own; not a driver option
	if err := resolveEnvRefs(&dc, p.ID, secretIDs); err != nil {
		return nil, err
	}
	cfg := api.AdapterConfig{Driver: d, Env: map[string]api.EnvValue{}, EnvironmentID: environmentID, Cwd: in.workspace, LifecycleMode: api.LifecyclePerTurn}
	if p.RunnerLifecycleMode != "" {
		cfg.LifecycleMode = api.LifecycleMode(p.RunnerLifecycleMode)
	}
	for name, id := range secretIDs {
		if lf := plan.Cell.LoginFile; lf != nil && name == lf.ID {
			// A login file is never bound to the environment: it is seeded into the
			// company's login HOME, which the agent launches with.
			cfg.LoginHome = true
			continue
		}
		cfg.Env[name] = api.EnvValue{Ref: &api.SecretRef{Type: api.SecretRefType, SecretID: id, Version: "latest"}}
	}
	if name, isCLI := d.CLI(); isCLI {
		if err := cliDriverConfig(&dc, name, p.ID, in); err != nil {
			return nil, err
		}
	}
	if name, real := d.Package(); real && (d.Kind == driver.KindACP || d.Kind == driver.KindApp) {
		if err := acpDriverConfig(&dc, name, p.ID, in); err != nil {
			return nil, err
		}
	}
	if d.Kind == driver.KindRPC {
		if err := piDriverConfig(&dc, d.Arg, p.ID, in); err != nil {
			return nil, err
		}
	}
	if !reflect.ValueOf(dc).IsZero() {
		cfg.DriverConfig = &dc
	}
	if d.NeedsReference() {
		if plan.Case.Reference == nil {
			return nil, fmt.Errorf("case %s has no reference script for the %s agent", plan.Cell.Case.ID, p.Driver)
		}
		b, err := json.Marshal(agent.BuiltinConfig{Schema: agent.BuiltinConfigSchema, Nonce: plan.Nonce, Reference: plan.Case.Reference, Hostile: in.hostile})
		if err != nil {
			return nil, fmt.Errorf("encoding the built-in agent's configuration: %w", err)
		}
		cfg.Builtin = b
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding the adapter configuration: %w", err)
	}
	return b, nil
}

// resolveEnvRefs resolves the secret references of dc.Env per attempt (catalog
// SecretRef): a secretId naming a declared credential becomes the id of the secret the
// secrets fixture stored for it in this attempt's instance (secretIDs: credential
// name → secret id); a UUID is kept (it names a stored secret already). dc.Env is
// replaced, never modified in place (it is the catalog's). Error: a credential that was
// not stored (the catalog lists it among the cell's required credentials, so a missing
// value stops the attempt before this).
func resolveEnvRefs(dc *api.DriverConfig, profile string, secretIDs map[string]string) error {
	if len(dc.Env) == 0 {
		return nil
	}
	env := make(map[string]api.EnvValue, len(dc.Env))
	for name, v := range dc.Env {
		if v.Ref != nil {
			ref := *v.Ref
			if id, ok := secretIDs[ref.SecretID]; ok {
				ref.SecretID = id
			} else if !catalog.IsSecretUUID(ref.SecretID) {
				return fmt.Errorf("profile %s: driverConfig env %s refers to credential %q, which this attempt did not store", profile, name, ref.SecretID)
			}
			if ref.Version == "" {
				ref.Version = "latest"
			}
			v.Ref = &ref
		}
		env[name] = v
	}
	dc.Env = env
	return nil
}

// cliDriverConfig completes a CLI driver's configuration dc: the pinned native binary
// (or entry script and the Node.js that runs it),
// and either the live provider (kept) or the scripted model's URL (the live provider
// and the model script removed: they are the executor's concern).
func cliDriverConfig(dc *api.DriverConfig, name, profile string, in agentInput) error {
	if in.cli.Binary == "" {
		return fmt.Errorf("agent CLI %s is not installed: no native binary for profile %s (run: agentproof agents install %s)", name, profile, name)
	}
	dc.Binary, dc.Script = in.cli.Binary, ""
	if in.cli.Node != "" {
		dc.Node = in.cli.Node
	}
	if in.live {
		if dc.Live == nil {
			return fmt.Errorf("profile %s has no live provider (driverConfig live) for --live", profile)
		}
		return nil
	}
	dc.Live, dc.ModelBaseURL = nil, in.modelURL
	return nil
}

// acpDriverConfig completes a real ACP agent's configuration dc (package name): the
// pinned binary (for an agent whose package runs on Node.js — claude, gemini — the
// entry script and the Node.js the campaign located for it, PinnedCLI.Node) and the
// scripted model's URL (the model script is the executor's concern). ACP drivers run
// offline only: --live is refused, and so is a JavaScript entry point without a
// located Node.js.
func acpDriverConfig(dc *api.DriverConfig, name, profile string, in agentInput) error {
	switch {
	case in.live:
		return fmt.Errorf("profile %s: the ACP drivers do not run against a live provider (--live)", profile)
	case in.cli.Binary == "":
		return fmt.Errorf("ACP agent %s is not installed: no binary for profile %s (run: agentproof agents install %s)", name, profile, name)
	case (strings.HasSuffix(in.cli.Binary, ".js") || strings.HasSuffix(in.cli.Binary, ".mjs")) && in.cli.Node == "":
		return fmt.Errorf("profile %s: ACP agent %s runs on Node.js and no Node.js was located for it", profile, name)
	}
	dc.Binary, dc.Script, dc.ModelBaseURL = in.cli.Binary, "", in.modelURL
	if in.cli.Node != "" {
		dc.Node = in.cli.Node
	}
	return nil
}

// piDriverConfig completes an rpc:<agent> (Pi) configuration dc: the pinned entry
// script, the Node.js that runs it and the scripted model's URL (the model script is the
// executor's concern). Pi runs offline only: --live is refused.
func piDriverConfig(dc *api.DriverConfig, name, profile string, in agentInput) error {
	switch {
	case in.live:
		return fmt.Errorf("profile %s: the rpc:%s driver does not run against a live provider (--live)", profile, name)
	case in.cli.Binary == "":
		return fmt.Errorf("agent %s is not installed: no entry script for profile %s (run: agentproof agents install %s)", name, profile, name)
	case in.cli.Node == "":
		return fmt.Errorf("profile %s: agent %s runs on Node.js, and no Node.js was located", profile, name)
	}
	dc.Binary, dc.Node, dc.Script, dc.ModelBaseURL = in.cli.Binary, in.cli.Node, "", in.modelURL
	return nil
}
