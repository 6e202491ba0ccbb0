package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentproof/agentproof/agent/clis"
	"github.com/spf13/cobra"
)

// pinnedNames lists the pinned agent CLIs (clis.Pinned, in its order) by name, with
// "(ACP)" after an ACP agent: "codex, opencode, claude, codex-acp (ACP), ...".
func pinnedNames() string {
	var names []string
	for _, c := range clis.Pinned {
		n := c.Name
		if c.ACP {
			n += " (ACP)"
		}
		names = append(names, n)
	}
	return strings.Join(names, ", ")
}

// pinnedSpecs lists every pinned CLI as "name package@version", one per line, indented,
// with ", optional" for the ones `agents install` skips without a name.
func pinnedSpecs() string {
	var lines []string
	for _, c := range clis.Pinned {
		opt := ""
		if c.Optional {
			opt = " (optional: installed only when named)"
		}
		acp := ""
		if c.ACP {
			acp = " · ACP"
		}
		lines = append(lines, fmt.Sprintf("  %-11s %s%s%s", c.Name, c.Spec(), acp, opt))
	}
	return strings.Join(lines, "\n")
}

func newAgentsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "Manage the pinned real agent CLIs (" + pinnedNames() + ")",
	}
	return withSubcommands(cmd, newAgentsInstallCmd(a), newAgentsListCmd(a))
}

// agentsInstallJSON is what `agentproof agents install --json` prints.
type agentsInstallJSON struct {
	Dir    string           `json:"dir"`
	Agents []clis.Installed `json:"agents"`
}

func newAgentsInstallCmd(a *app) *cobra.Command {
	var (
		dir    string
		asJSON bool
	)
	var pinned []string
	for _, c := range clis.Pinned {
		opt := ""
		if c.Optional {
			opt = ", only when named"
		}
		pinned = append(pinned, fmt.Sprintf("  %-10s %s%s", c.Name, c.Spec(), opt))
	}
	cmd := &cobra.Command{
		Use:   "install [NAME...]",
		Short: "Install the pinned agent CLIs with npm into a cache directory",
		Long: strings.TrimSpace(`
Install the pinned agent CLIs with npm (install scripts off) into a cache
directory, one directory per name and version, and locate each CLI's native binary
(agentproof runs it directly). A CLI already installed is reused. Without NAME it
installs every CLI that is not optional.

Pinned CLIs:
` + strings.Join(pinned, "\n") + `

Progress lines go to stderr; --json prints {dir, agents: [{name, package, version,
dir, binary, reused}]} on stdout. Without npm it exits 2 naming the npm command.`),
		RunE: func(cmd *cobra.Command, args []string) error {
			cs, err := pinnedCLIs(args)
			if err != nil {
				return err
			}
			dir, err = agentsCacheDir(dir)
			if err != nil {
				return err
			}
			var progress io.Writer = a.stderr
			installed, err := clis.Install(cmd.Context(), cs, clis.Options{Dir: dir, Progress: progress})
			var ne *clis.NPMError
			if errors.As(err, &ne) {
				return &UsageError{Err: err}
			}
			if err != nil {
				return err
			}
			if asJSON {
				out := agentsInstallJSON{Dir: dir, Agents: installed}
				if len(installed) > 0 {
					out.Dir = strings.TrimSuffix(installed[0].Dir, "/"+installed[0].Name+"-"+installed[0].Version)
				}
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			for _, in := range installed {
				if _, err := fmt.Fprintf(a.stdout, "%s %s %s\n", in.Name, in.Version, in.Binary); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "cache directory (default $AGENTPROOF_AGENTS_DIR, else the user cache directory's agentproof/agents)")
	f.BoolVar(&asJSON, "json", false, "print the installed CLIs as JSON")
	return cmd
}

// pinnedCLIs returns the pinned CLIs named by names, in order, or without names every
// pinned CLI that is not optional. An unknown name is a usage error (exit 2) listing
// every unknown name and the known ones.
func pinnedCLIs(names []string) ([]clis.CLI, error) {
	var cs []clis.CLI
	if len(names) == 0 {
		for _, c := range clis.Pinned {
			if !c.Optional {
				cs = append(cs, c)
			}
		}
	}
	var unknown []string
	for _, name := range names {
		c, ok := clis.Lookup(name)
		if !ok {
			unknown = append(unknown, name)
			continue
		}
		cs = append(cs, c)
	}
	if len(unknown) > 0 {
		var known []string
		for _, c := range clis.Pinned {
			known = append(known, c.Name)
		}
		return nil, usageErrorf("unknown agent CLI %s (known: %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return cs, nil
}
