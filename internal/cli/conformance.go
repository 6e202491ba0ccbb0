package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/controlplane/conformance"
)

// conformanceReport is what `agentproof conformance --json` prints.
type conformanceReport struct {
	Cases  []conformance.CaseResult `json:"cases"`
	Passed int                      `json:"passed"`
	Failed int                      `json:"failed"`
}

func newConformanceCmd(a *app) *cobra.Command {
	return newConformanceCmdFor(a, conformance.MemoryHarness{})
}

// newConformanceCmdFor runs the suite against h (tests pass a broken port).
func newConformanceCmdFor(a *app, h conformance.Harness) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "Run the control-plane port conformance suite against the in-memory port",
		Long: strings.TrimSpace(`
Run the control-plane port conformance suite (seed 001: the 13 port contract steps
and the 40 Given/When/Then cases) against the deterministic in-memory port.

Prints one line per case ("ok" or "FAIL" with the reason) and a final line
"N passed, N failed". Exits 1 when any case fails.`),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rs := conformance.Check(h)
			passed, failed := conformance.Summary(rs)
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				if err := enc.Encode(conformanceReport{Cases: rs, Passed: passed, Failed: failed}); err != nil {
					return err
				}
			} else {
				for _, r := range rs {
					if r.Passed {
						fmt.Fprintf(a.stdout, "ok    %s\n", r.Name)
					} else {
						fmt.Fprintf(a.stdout, "FAIL  %s: %s\n", r.Name, r.Detail)
					}
				}
				fmt.Fprintf(a.stdout, "%d passed, %d failed\n", passed, failed)
			}
			if failed > 0 {
				return withExit(ExitFailed, nil)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object {cases: [{name, passed, detail}], passed, failed}")
	return cmd
}
