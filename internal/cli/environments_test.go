package cli

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/environment"

	"github.com/agentproof/agentproof/verdict"
)

// TestEnvironmentsProbe: `environments probe --json` prints one report per provider
// (local available; the sandbox's checks each named; the container's as
// checkContainerReport says, by how this test binary is linked) and the text form says
// the same. With CI=true the sandbox must be available: .ci/run installs bubblewrap and runs as
// root.
func TestEnvironmentsProbe(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := Main([]string{"environments", "probe", "--json"}, strings.NewReader(""), &out, &errb); verdict.ExitCode(code) != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var reports []environment.ProbeReport
	if err := json.Unmarshal(out.Bytes(), &reports); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(reports) != 3 || reports[0].Provider != environment.ProviderLocal || !reports[0].Available || reports[1].Provider != environment.ProviderSandbox ||
		reports[2].Provider != environment.ProviderContainer {
		t.Fatalf("reports %+v", reports)
	}
	checkContainerReport(t, reports[2])
	sb := reports[1]
	if len(sb.Checks) < 5 {
		t.Errorf("sandbox checks %+v", sb.Checks)
	}
	if len(sb.Limits) != 4 {
		t.Errorf("sandbox limits %+v: one per resource (cpu, memory, pids, disk)", sb.Limits)
	}
	for _, l := range sb.Limits {
		if os.Geteuid() == 0 && sb.Available && !l.Enforced {
			t.Errorf("root's available sandbox does not enforce %+v", l)
		}
	}
	if os.Getenv("CI") == "true" && !sb.Available {
		t.Errorf("CI=true but the sandbox is unavailable: %v", sb.Missing())
	}
	out.Reset()
	if code := Main([]string{"environments", "probe"}, strings.NewReader(""), &out, &errb); verdict.ExitCode(code) != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	text := out.String()
	if !strings.Contains(text, "local: available\n") || !strings.Contains(text, "sandbox: ") || !strings.Contains(text, " bwrap ") || !strings.Contains(text, "container: ") ||
		!strings.Contains(text, "  limits (") {
		t.Errorf("text report:\n%s", text)
	}
	if !sb.Available && !strings.Contains(text, "MISSING") {
		t.Errorf("an unavailable sandbox must show what is missing:\n%s", text)
	}
}

// checkContainerReport: the container's report names the engine it found first, and
// its executable check follows how this test binary (the executable of the commands
// a test runs in process) is linked, which the test reads from the binary itself: a
// dynamically linked one (cgo, or -race) is named as such and the provider is
// unavailable; a static one (CGO_ENABLED=0) as root with podman runs the trial
// container, with this binary as its init, and the provider is available. The
// report is available exactly when every check passed.
func checkContainerReport(t *testing.T, ctr environment.ProbeReport) {
	t.Helper()
	if len(ctr.Checks) < 3 || ctr.Checks[0].Name != "engine" {
		t.Fatalf("container checks %+v", ctr.Checks)
	}
	checks := map[string]environment.Check{}
	allOK := true
	for _, c := range ctr.Checks {
		checks[c.Name] = c
		allOK = allOK && c.OK
	}
	if ctr.Available != allOK {
		t.Errorf("available %v, every check ok %v: %+v", ctr.Available, allOK, ctr.Checks)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	static := !dynamicallyLinked(t, exe)
	if c := checks["executable"]; c.OK != static || (!static && !strings.Contains(c.Detail, "dynamically linked")) {
		t.Errorf("test binary %s static %v: executable check %+v", exe, static, c)
	}
	podman := checks["engine"].OK && strings.HasPrefix(checks["engine"].Detail, "podman ")
	if static && podman && os.Geteuid() == 0 {
		if c, ok := checks["trial"]; !ok || !c.OK || !ctr.Available {
			t.Errorf("static test binary as root with podman: the trial container must run with it as init: %+v", ctr.Checks)
		}
	}
}

// dynamicallyLinked reports whether the ELF executable exe names an interpreter (the
// dynamic loader).
func dynamicallyLinked(t *testing.T, exe string) bool {
	t.Helper()
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true
		}
	}
	return false
}

// TestProbeState: the headline of an available provider names the limits it cannot
// enforce, since an environment declaring one is not run here.
func TestProbeState(t *testing.T) {
	limit := func(r environment.Resource, enforced bool) environment.Limit {
		return environment.Limit{Resource: r, Enforced: enforced}
	}
	for _, tc := range []struct {
		name string
		r    environment.ProbeReport
		want string
	}{
		{"unavailable", environment.ProbeReport{Limits: []environment.Limit{limit(environment.ResourceCPU, false)}}, "unavailable"},
		{"no limits", environment.ProbeReport{Available: true}, "available"},
		{"all enforced", environment.ProbeReport{Available: true, Limits: []environment.Limit{limit(environment.ResourceCPU, true)}}, "available"},
		{"some not enforced", environment.ProbeReport{Available: true, Limits: []environment.Limit{
			limit(environment.ResourceCPU, false), limit(environment.ResourceMemory, true), limit(environment.ResourcePIDs, false)}},
			"available, but without cpu, pids limits: an environment declaring one is not run here"},
	} {
		if got := probeState(tc.r); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
