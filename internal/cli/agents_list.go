package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/agentproof/agentproof/agent/clis"
	"github.com/spf13/cobra"
)

// agentsListEntry is one pinned CLI in `agentproof agents list --json`: its name and
// pinned package and version, whether it is optional (installed only when named) and
// an ACP agent, and its install in the cache directory: the native binary's path and
// SHA-256 when installed, else the reason it is not usable ("not installed", or what
// is wrong with the install).
type agentsListEntry struct {
	Name         string `json:"name"`
	Package      string `json:"package"`
	Version      string `json:"version"`
	Optional     bool   `json:"optional"`
	ACP          bool   `json:"acp"`
	Installed    bool   `json:"installed"`
	Binary       string `json:"binary,omitempty"`
	BinarySHA256 string `json:"binarySha256,omitempty"`
	Problem      string `json:"problem,omitempty"`
}

// newAgentsListCmd is `agentproof agents list`: every pinned CLI and whether it is
// installed in the cache directory, without installing anything.
func newAgentsListCmd(a *app) *cobra.Command {
	var (
		dir    string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the pinned agent CLIs and whether each is installed (nothing is installed)",
		Long: strings.TrimSpace(`
List every pinned agent CLI with its npm package and version and whether it is
installed in the cache directory (the one 'agentproof agents install' and 'run' use),
with the native binary agentproof runs. It installs nothing and needs no npm. --json
prints {dir, agents: [{name, package, version, optional, acp, installed, binary,
binarySha256, problem}]}.`),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := agentsCacheDir(dir)
			if err != nil {
				return err
			}
			dir = d
			entries := agentsList(dir)
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					Dir    string            `json:"dir"`
					Agents []agentsListEntry `json:"agents"`
				}{dir, entries})
			}
			return printAgentsList(a, dir, entries)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "cache directory (default $AGENTPROOF_AGENTS_DIR, else the user cache directory's agentproof/agents)")
	f.BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}

// agentsList locates every pinned CLI's install in dir (clis.Locate).
func agentsList(dir string) []agentsListEntry {
	var out []agentsListEntry
	for _, c := range clis.Pinned {
		e := agentsListEntry{Name: c.Name, Package: c.Package, Version: c.Version, Optional: c.Optional, ACP: c.ACP}
		in, err := clis.Locate(dir, c, clis.HostPlatform())
		var ni *clis.NotInstalledError
		switch {
		case errors.As(err, &ni):
			e.Problem = "not installed"
		case err != nil:
			e.Problem = err.Error()
		default:
			e.Installed, e.Binary, e.BinarySHA256 = true, in.Binary, in.BinarySHA256
		}
		out = append(out, e)
	}
	return out
}

// printAgentsList prints the list as a table: name, pinned package@version, and the
// binary or the problem.
func printAgentsList(a *app, dir string, entries []agentsListEntry) error {
	fmt.Fprintf(a.stdout, "Agent CLIs in %s:\n", dir)
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	missing := 0
	for _, e := range entries {
		state := e.Binary
		if !e.Installed {
			state = e.Problem
			if !e.Optional {
				missing++
			}
		}
		kind := ""
		if e.ACP {
			kind = " (ACP)"
		}
		if e.Optional {
			kind += " (optional)"
		}
		fmt.Fprintf(tw, "  %s%s\t%s@%s\t%s\n", e.Name, kind, e.Package, e.Version, state)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if missing > 0 {
		_, err := fmt.Fprintf(a.stdout, "%d CLI(s) not installed: 'agentproof agents install' installs them (run also does, on first use).\n", missing)
		return err
	}
	return nil
}
