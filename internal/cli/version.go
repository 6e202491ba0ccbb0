package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionInfo is what `agentproof version --json` prints.
type versionInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision"`
	Modified bool   `json:"modified"`
	Go       string `json:"go"`
}

// readVersion reads the module version and VCS revision from the build info. A binary
// built without VCS stamping (go run, -buildvcs=false) reports revision "unknown".
func readVersion() versionInfo {
	v := versionInfo{Version: "(devel)", Revision: "unknown", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func newVersionCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print agentproof's version and VCS revision",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := readVersion()
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				return enc.Encode(v)
			}
			mod := ""
			if v.Modified {
				mod = " (modified)"
			}
			_, err := fmt.Fprintf(a.stdout, "agentproof %s revision %s%s %s\n", v.Version, v.Revision, mod, v.Go)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object {version, revision, modified, go}")
	return cmd
}
