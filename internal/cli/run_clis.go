package cli

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/agentproof/agentproof/agent/clis"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign/attempt"
	"github.com/agentproof/agentproof/catalog"
)

// EnvAgentsDir names the agent CLI cache `agentproof run` uses when --agents-dir is not
// given (CI installs the CLIs there with .ci/agents.sh).
const EnvAgentsDir = "AGENTPROOF_AGENTS_DIR"

// agentsCacheDir is the agent CLI cache every command uses: flag when given, else
// $AGENTPROOF_AGENTS_DIR, else the user cache directory's agentproof/agents. Error: no
// cache directory can be determined (no HOME), a usage error naming the flag.
func agentsCacheDir(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if dir := os.Getenv(EnvAgentsDir); dir != "" {
		return dir, nil
	}
	dir, err := clis.DefaultDir()
	if err != nil {
		return "", &UsageError{Err: err}
	}
	return dir, nil
}

// ensureCLIs returns the pinned install of every agent CLI the selected cells run
// (name → native binary, pinned version, the binary's SHA-256 recorded at install),
// installing missing ones into the cache first (progress on stderr). Errors: an
// unknown CLI or no cache directory (usage, exit 2); npm missing or failing (usage,
// exit 2, naming `agentproof agents install`); any other install error.
func (a *app) ensureCLIs(cmd *cobra.Command, cells []*catalog.Cell, o runOptions) (map[string]attempt.PinnedCLI, error) {
	var need []clis.CLI
	for _, cell := range cells {
		name, ok := cell.Profile.Driver.Package() // an exec CLI or a real ACP agent
		if !ok || slices.ContainsFunc(need, func(c clis.CLI) bool { return c.Name == name }) {

			continue
		}
		c, ok := clis.Lookup(name)
		if !ok {
			return nil, usageErrorf("profile %s: no pinned agent CLI named %s", cell.Profile.ID, name)
		}
		need = append(need, c)
	}
	if len(need) == 0 {
		return nil, nil
	}
	dir, err := agentsCacheDir(o.agentsDir)
	if err != nil {
		return nil, err
	}
	out := map[string]attempt.PinnedCLI{}
	var missing []clis.CLI
	for _, c := range need {
		if in, err := clis.Locate(dir, c, clis.HostPlatform()); err == nil {
			out[c.Name] = pinOf(in)
		} else {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return withNode(cmd, out, need)
	}
	need = missing
	installed, err := clis.Install(cmd.Context(), need, clis.Options{Dir: dir, Progress: a.stderr})
	var ne *clis.NPMError
	if errors.As(err, &ne) {
		return nil, &UsageError{Err: fmt.Errorf("%w\nInstall the agent CLIs first: agentproof agents install --dir %s %s", err, dir, cliNames(need))}
	}
	if err != nil {
		return nil, fmt.Errorf("installing the agent CLIs: %w", err)
	}
	for _, in := range installed {
		out[in.Name] = pinOf(in)
	}
	return withNode(cmd, out, need)
}

// withNode sets the Node.js binary of every pinned CLI of need whose entry point is a
// JavaScript file (clis.RuntimeNode), found on this process's PATH. Errors: no Node.js
// 20 or later (usage, exit 2).
func withNode(cmd *cobra.Command, out map[string]attempt.PinnedCLI, need []clis.CLI) (map[string]attempt.PinnedCLI, error) {
	node := ""
	for _, c := range need {
		p, ok := out[c.Name]
		if !ok || c.Runtime != clis.RuntimeNode {
			continue
		}
		if node == "" {
			n, err := clis.Node(cmd.Context(), os.Environ())
			if err != nil {
				return nil, &UsageError{Err: fmt.Errorf("agent CLI %s runs on Node.js: %w", c.Name, err)}
			}
			node = n
		}
		p.Node = node
		out[c.Name] = p
	}
	return out, nil
}

func pinOf(in clis.Installed) attempt.PinnedCLI {
	p := attempt.PinnedCLI{Binary: in.Binary, Version: in.Version, SHA256: in.BinarySHA256}
	if f := in.BinaryFile; f != nil && in.BinarySHA256 != "" {
		p.Known = &api.KnownDigest{Dev: f.Dev, Ino: f.Ino, Size: f.Size, MtimeNs: f.MtimeNs, CtimeNs: f.CtimeNs, SHA256: in.BinarySHA256}
	}
	return p
}

func cliNames(cs []clis.CLI) string {
	s := ""
	for i, c := range cs {
		if i > 0 {
			s += " "
		}
		s += c.Name
	}
	return s
}
