package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentproof/agentproof/worker"
	"github.com/spf13/cobra"
)

// newFixtureManifestCmd prints the execution manifest of the guarded fixture program:
// this executable plus the embedded worker sources.
func newFixtureManifestCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "manifest",
		Short: "Print the execution manifest that guarded fixture runs pin",
		Long: strings.TrimSpace(`
Print the execution manifest of the guarded fixture program (protocol
sf-guarded-fixture/1): the SHA-256 of this agentproof executable as the worker runs it
and of the worker sources embedded in it at build time, sorted by path, and the digest
over them. A guarded run pinned to a digest refuses to start (drift) when the program
no longer matches it.`),
		Example: `  agentproof fixture manifest
  agentproof fixture manifest --json`,
		Args: noArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			m, err := worker.GuardedFixtureManifest()
			if err != nil {
				return fmt.Errorf("execution manifest: %w", err)
			}
			if asJSON {
				return json.NewEncoder(a.stdout).Encode(m)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "protocol:  %s\ncollector: %s\ndigest:    %s\nfiles:\n", m.Protocol, m.Collector, m.Digest)
			for _, f := range m.Files {
				fmt.Fprintf(&b, "  %s  %s\n", f.SHA256, f.Path)
			}
			_, err = fmt.Fprint(a.stdout, b.String())
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the manifest as one JSON object {protocol, collector, files, digest}")
	return cmd
}
