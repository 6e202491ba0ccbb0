package catalog

import (
	"io/fs"
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/agentproof/agentproof/match"
)

// Verify is a case's verifier (docs/workspaces.md "Verifier commands"): commands the
// harness runs after the agent's last turn, in the cell's environment, as a process
// tree of their own that the agent never sees, and the workspace paths they depend on.
//
//   - Protect: workspace-relative paths (files or directories, slash-separated) hashed
//     before the agent starts and again before the first step runs; any change fails
//     the attempt verifier_tampered, naming the file.
//   - Steps: run in order, each with its own deadline; a command matcher grades each
//     by its id.
//   - FinalWorkspaceBytes: the bound, in bytes, of the file content of the final
//     workspace an attempt keeps as evidence for a regrade (docs/regrade.md; 1 to
//     MaxFinalWorkspaceBytes; absent: `run --final-workspace-bytes`).
type Verify struct {
	Protect             []string     `yaml:"protect"`
	Steps               []VerifyStep `yaml:"steps"`
	FinalWorkspaceBytes int64        `yaml:"finalWorkspaceBytes"`
}

// MaxFinalWorkspaceBytes bounds Verify.FinalWorkspaceBytes (1 GiB).
const MaxFinalWorkspaceBytes = 1 << 30

// VerifyStep is one verifier command.
//
//   - ID: the name a command matcher grades it by (lower-case letters, digits, - and _).
//   - Command: the argv, run with no shell in the workspace; its first element is
//     looked up on the verifier's PATH (/usr/local/bin:/usr/bin:/bin) unless absolute.
//   - TimeoutMs: its own deadline (default DefaultVerifyTimeoutMs, at most
//     MaxVerifyTimeoutMs); a step its deadline stops has no exit code.
//   - Network: true lets it reach the network; false (the default) runs it in a network
//     namespace of its own with only a loopback interface.
//   - Report: a test report it writes (a JUnit XML or CTRF JSON file, workspace-relative)
//     whose counts a command matcher's tests parameter grades.
type VerifyStep struct {
	ID        string        `yaml:"id"`
	Command   []string      `yaml:"command"`
	TimeoutMs int           `yaml:"timeoutMs"`
	Network   bool          `yaml:"network"`
	Report    *VerifyReport `yaml:"report"`
}

// VerifyReport is a verifier step's test report: its workspace-relative path and its
// format (one of ReportFormats).
type VerifyReport struct {
	Path   string `yaml:"path"`
	Format string `yaml:"format"`
}

// ReportFormats are the report formats a verifier step may declare (VerifyReport.Format).
var ReportFormats = []string{match.ReportJUnit, match.ReportCTRF}

// Verifier step deadlines, in milliseconds.
const (
	DefaultVerifyTimeoutMs = 120_000
	MaxVerifyTimeoutMs     = 3_600_000
)

var stepIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`) })

// Timeout is the step's deadline in milliseconds (its own, or the default).
func (s VerifyStep) Timeout() int {
	if s.TimeoutMs > 0 {
		return s.TimeoutMs
	}
	return DefaultVerifyTimeoutMs
}

// validateVerify checks a case's verifier: at least one step, each with a unique id,
// a command and a deadline within bounds, a report with a known format and a clean
// path, and protected paths that are clean and relative.
func (v *validator) validateVerify(cs *Case, name string) {
	vf := cs.Verify
	if vf == nil {
		return
	}
	if len(vf.Steps) == 0 {
		v.add(v.at(vf, cs), "%s verify lists no steps", name)
	}
	if vf.FinalWorkspaceBytes < 0 || vf.FinalWorkspaceBytes > MaxFinalWorkspaceBytes {
		v.add(v.at(&vf.FinalWorkspaceBytes, vf, cs), "%s verify finalWorkspaceBytes must be 1 to %d (absent: run --final-workspace-bytes)", name, int64(MaxFinalWorkspaceBytes))
	}
	for i := range vf.Protect {
		if !cleanRelative(vf.Protect[i]) {
			v.add(v.at(&vf.Protect[i], vf, cs), "%s verify protect[%d] %q must be a clean workspace-relative path (no leading /, no . or .. elements)", name, i, vf.Protect[i])
		}
	}
	seen := map[string]bool{}
	for i := range vf.Steps {
		st := &vf.Steps[i]
		at := v.at(st, vf, cs)
		switch {
		case !stepIDPattern().MatchString(st.ID):
			v.add(at, "%s verify step %d: id %q must be 1 to 64 lower-case letters, digits, - or _", name, i+1, st.ID)
		case seen[st.ID]:
			v.add(at, "%s verify step id %q is used twice", name, st.ID)
		}
		seen[st.ID] = true
		if len(st.Command) == 0 || st.Command[0] == "" {
			v.add(at, "%s verify step %s: command must name a program (an argv list, run without a shell)", name, st.ID)
		}
		if st.TimeoutMs < 0 || st.TimeoutMs > MaxVerifyTimeoutMs {
			v.add(v.at(&st.TimeoutMs, st, vf, cs), "%s verify step %s: timeoutMs must be 1 to %d (absent: %d)", name, st.ID, MaxVerifyTimeoutMs, DefaultVerifyTimeoutMs)
		}
		if r := st.Report; r != nil {
			v.enum("verify step report format", &r.Format, ReportFormats, r, true)
			if !cleanRelative(r.Path) {
				v.add(v.at(&r.Path, r, st), "%s verify step %s: report path %q must be a clean workspace-relative path", name, st.ID, r.Path)
			}
		}
	}
	for i := range cs.Matchers {
		m := &cs.Matchers[i]
		if m.Kind == match.KindCommand && !seen[m.Name] {
			v.add(v.at(m, cs), "%s: command matcher %d names verifier step %q, which its verify does not declare", name, i+1, m.Name)
		}
	}
}

// cleanRelative reports whether p is a clean, relative, slash-separated path of the
// workspace (fs.ValidPath: no leading /, no empty, . or .. element) other than ".".
func cleanRelative(p string) bool {
	return p != "" && p != "." && fs.ValidPath(p) && path.Clean(p) == p && !strings.Contains(p, "\\")
}

// validateCommandMatchers refuses a command matcher in a case without a verifier.
func (v *validator) validateCommandMatchers(cs *Case, name string) {
	if cs.Verify != nil {
		return
	}
	for i := range cs.Matchers {
		if cs.Matchers[i].Kind == match.KindCommand {
			v.add(v.at(&cs.Matchers[i], cs), "%s: command matcher %d grades a verifier step, but the case declares no verify", name, i+1)
		}
	}
}

// verifyEnvironment checks that a cell's verifier can run in its environment as
// declared: in a local, sandbox or container environment, and without network in a
// sandbox or container, whose only network is the lease's allowlist.
func (v *validator) verifyEnvironment(cell *Cell) {
	vf, env := cell.Case.Verify, cell.Environment
	if vf == nil {
		return
	}
	switch env.Provider {
	case "local":
	case "sandbox", "container":
		for i := range vf.Steps {
			if vf.Steps[i].Network {
				v.add(v.at(&vf.Steps[i].Network, &vf.Steps[i], vf, cell.Case), "case %s verify step %s declares network, which a %s environment (%s) does not give: its only network is the lease's allowlist (cell %s)", cell.Case.ID, vf.Steps[i].ID, env.Provider, env.ID, cell.ID)
			}
		}
	default:
		v.add(v.at(vf, cell.Case), "case %s declares verify, which runs in local, sandbox and container environments only (environment %s has provider %s; cell %s)", cell.Case.ID, env.ID, env.Provider, cell.ID)
	}
}
