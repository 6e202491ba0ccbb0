package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Revision is the VCS revision stamped with the linker when the build info has none:
// go build -ldflags "-X github.com/agentproof/agentproof/internal/cli.Revision=$(git
// rev-parse HEAD)". Empty by default.
var Revision string

// Where a version's revision came from (versionInfo.RevisionSource).
const (
	revisionFromVCS     = "vcs"     // the build info's vcs.revision (go build in a checkout)
	revisionFromLdflags = "ldflags" // Revision, set with -ldflags -X
	revisionUnknown     = "none"    // neither: the binary cannot know its revision
)

// noVCSNote says plainly why a revision is unknown and how to get one.
const noVCSNote = "this binary carries no VCS information. go build records it only in a git checkout " +
	"that the user building owns (git refuses another user's repository, so the build needs -buildvcs=false there) and " +
	"not with -buildvcs=false (look for it in `go env GOFLAGS`); go run never does. " +
	"Rebuild in a checkout you own (chown it, or clone it as yourself) as the README does, with: " +
	"CGO_ENABLED=0 go build -buildvcs=true -ldflags=\"-s -w\" -o agentproof ./cmd/agentproof"

// versionInfo is what `agentproof version --json` prints: the module version, the
// revision ("unknown" when the binary has none), where the revision came from
// (RevisionSource) and, when unknown, why (RevisionNote), whether the tree was
// modified (from VCS stamping only) and the Go version.
type versionInfo struct {
	Version        string `json:"version"`
	Revision       string `json:"revision"`
	RevisionSource string `json:"revisionSource"`
	RevisionNote   string `json:"revisionNote,omitempty"`
	Modified       bool   `json:"modified"`
	Go             string `json:"go"`
}

// readVersion reads the module version and VCS revision from the build info, falling
// back to Revision (-ldflags -X); a binary with neither (built with -buildvcs=false,
// go run, outside a checkout: the build info then has no vcs.* settings at all)
// reports revision "unknown" with the reason in RevisionNote.
func readVersion() versionInfo {
	v := versionInfo{Version: "(devel)", Revision: "unknown", RevisionSource: revisionUnknown, Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision, v.RevisionSource = s.Value, revisionFromVCS
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if v.RevisionSource == revisionUnknown && Revision != "" {
		v.Revision, v.RevisionSource = Revision, revisionFromLdflags
	}
	if v.RevisionSource == revisionUnknown {
		v.RevisionNote = noVCSNote
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
			if _, err := fmt.Fprintf(a.stdout, "agentproof %s revision %s%s %s\n", v.Version, v.Revision, mod, v.Go); err != nil {
				return err
			}
			if v.RevisionNote != "" {
				_, err := fmt.Fprintf(a.stdout, "revision unknown: %s\n", v.RevisionNote)
				return err
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object {version, revision, revisionSource, revisionNote, modified, go}")
	return cmd
}
