package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/providers"
	"github.com/spf13/cobra"
)

// newEnvironmentsCmd is `agentproof environments probe [--json]`: every environment
// provider's probe report (package environment). It exits 0 when it could print the
// reports, whether or not a provider is available; the report says what is missing.
func newEnvironmentsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "environments",
		Short: "Inspect the execution environment providers of this machine",
	}
	var asJSON bool
	probe := &cobra.Command{
		Use:   "probe",
		Short: "Check whether this machine can run each environment provider (local, sandbox, container)",
		Long: strings.TrimSpace(`
Probe every environment provider for real: the sandbox probe runs a trial bubblewrap
sandbox, creates and removes a cgroup per pinned controller and mounts a small tmpfs;
the container probe says which engine it found (podman first, docker where podman is
missing, and why it cannot serve) and runs a trial container with the provider's
limits and no network. Each requirement is reported as ok or missing with what it
found (versions, paths, the cgroup hierarchy serving each controller), then each
resource limit (cpu, memory, pids, disk) as enforced here or not, with how to get it:
a normal user's sandbox runs in a user namespace of its own, and an environment that
declares a limit it cannot enforce is not run here. Nothing is left behind.`),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			var reports []environment.ProbeReport
			for _, p := range providers.All() {
				reports = append(reports, p.Probe(ctx))
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(reports)
			}
			var b strings.Builder
			for _, r := range reports {
				fmt.Fprintf(&b, "%s: %s\n", r.Provider, probeState(r))
				for _, c := range r.Checks {
					mark := "ok     "
					if !c.OK {
						mark = "MISSING"
					}
					fmt.Fprintf(&b, "  %s %-14s %s\n", mark, c.Name, c.Detail)
				}
				printLimits(&b, r.Limits)
			}
			_, err := fmt.Fprint(a.stdout, b.String())
			return err
		},
	}
	probe.Flags().BoolVar(&asJSON, "json", false, "print the reports as a JSON array")
	return withSubcommands(cmd, probe)
}

// probeState is a provider's headline: available or unavailable; an available one
// that cannot enforce some limits names them, since an environment declaring one of
// them is not run here (the default catalog's sandbox and container environments
// declare limits).
func probeState(r environment.ProbeReport) string {
	if !r.Available {
		return "unavailable"
	}
	var missing []string
	for _, l := range r.Limits {
		if !l.Enforced {
			missing = append(missing, string(l.Resource))
		}
	}
	if len(missing) == 0 {
		return "available"
	}
	return "available, but without " + strings.Join(missing, ", ") + " limits: an environment declaring one is not run here"
}

// printLimits writes the limits a provider can enforce here, one line each: enforced
// or NOT ENFORCED, the resource, and how, or why not and how to get it.
func printLimits(b *strings.Builder, limits []environment.Limit) {
	if len(limits) == 0 {
		return
	}
	b.WriteString("  limits (an environment declaring one NOT ENFORCED here is not run here, never run without it):\n")
	for _, l := range limits {
		mark, text := "enforced", l.Detail
		if !l.Enforced {
			mark, text = "NOT ENFORCED", l.Needs+": "+l.Detail
		}
		fmt.Fprintf(b, "    %-12s %-7s %s\n", mark, l.Resource, text)
	}
}
