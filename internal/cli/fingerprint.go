package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// fingerprintEntry is one element of `agentproof fingerprint --json`.
type fingerprintEntry struct {
	Suite       string `json:"suite"`
	Fingerprint string `json:"fingerprint"`
}

func newFingerprintCmd(a *app) *cobra.Command {
	var suites []string
	var asJSON bool
	var dir *catalogSource
	cmd := &cobra.Command{
		Use:   "fingerprint",
		Short: "Print each suite's definition fingerprint (64 hex digits)",
		Long: `Print the suite definition fingerprint of every suite (or of each --suite), one
"<fingerprint>  <suite>" line per suite in catalog order. The fingerprint is the
SHA-256 of the suite's definition: the original harness's inputs in its JSON.stringify
form (the suite's id, profiles (id, model, qualification), environments (id,
configurationKey), cases (id, flow, run counts, restart flag), sorted exclusions and
definitionMetadata) followed by everything that grades a cell (prompts, matchers,
reference scripts, timeouts, drivers and their configuration, expected verdicts;
docs/regressions.md "What the definition covers"). Labels, descriptions and groups
are not part of it.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadCatalog(*dir)
			if err != nil {
				return err
			}
			suites = trimAll(suites)
			var unknown []string
			for _, s := range suites {
				if c.Suite(s) == nil && !slices.Contains(unknown, s) {
					unknown = append(unknown, s)
				}
			}
			if len(unknown) > 0 {
				return usageErrorf("--suite: unknown suite: %s (use 'agentproof list' to inspect valid cells)", strings.Join(unknown, ", "))
			}
			var out []fingerprintEntry
			for _, s := range c.Suites {
				if len(suites) == 0 || slices.Contains(suites, s.ID) {
					out = append(out, fingerprintEntry{Suite: s.ID, Fingerprint: s.Fingerprint})
				}
			}
			if asJSON {
				return json.NewEncoder(a.stdout).Encode(out)
			}
			var b strings.Builder
			for _, e := range out {
				fmt.Fprintf(&b, "%s  %s\n", e.Fingerprint, e.Suite)
			}
			_, err = a.stdout.Write([]byte(b.String()))
			return err
		},
	}
	dir = catalogFlag(cmd)
	cmd.Flags().StringSliceVar(&suites, "suite", nil, "print only this suite (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of {suite, fingerprint}")
	return cmd
}
