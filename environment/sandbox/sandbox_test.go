package sandbox

import (
	"strings"
	"testing"

	"github.com/agentproof/agentproof/environment"
)

// TestFacts: inside the sandbox the agent is the sandbox user without capabilities
// and with no_new_privs, in its own UTS namespace, under init as PID 1, sees only the
// sandbox's own processes and only the loopback interface, and works in its workspace;
// the worker's outcome is the agent's own exit.
func TestFacts(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	p := New(Options{})
	l := setup(t, p, environment.LeaseSpec{})
	r := attack(t, p, l, "facts")
	if exitCode(r.Outcome) != "0" || len(r.Problems) > 0 {
		t.Fatalf("exit %s, problems %v\nstdout %s\nstderr %s", exitCode(r.Outcome), r.Problems, r.stdout, r.stderr)
	}
	out := r.report.Output
	for _, want := range []string{"uid=65534 ", "gid=65534 ", "host=" + Hostname, "sandbox-init", "ifaces=lo ", "cwd=" + l.Workspace, "NoNewPrivs: 1", "CapEff: 0000000000000000"} {
		if !strings.Contains(out, want) {
			t.Errorf("facts lack %q: %s", want, out)
		}
	}
	// stdin is /dev/null, stdout and stderr the worker's pipes, nothing else inherited
	if !strings.Contains(out, "fds=0:/dev/null,1:pipe,2:pipe,") || strings.Count(out, ":pipe") != 2 {
		t.Errorf("the agent inherited more than its stdio (init's status pipe?): %s", out)
	}
	if r := attack(t, p, l, "read", "/proc/1/environ"); !r.report.Contained {
		t.Errorf("the agent can read init's /proc entries: %+v", r.report)
	}
	// Only init and the agent itself: no process of the host is visible.
	pid := r.Facts["agentPid"]
	if !strings.Contains(out, "pid="+pid+" ") || !strings.Contains(out, "pids=1,"+pid+" ") {
		t.Errorf("the agent (pid %s) sees more than init and itself: %s", pid, out)
	}
}
