package flows

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/api"
)

// sleeper starts a real child process (sleep) with the given extra environment and
// returns it with its start time in clock ticks; the test kills it at cleanup.
func sleeper(t *testing.T, env ...string) (*exec.Cmd, uint64) {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatalf("no sleep binary: %v", err)
	}
	cmd := exec.Command(sleep, "60")
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Start returns once the exec is past its point of no return, a moment before the
	// kernel fills in the new program's environment: /proc/<pid>/environ reads empty
	// until then. Wait for it (identify reads it).
	environ := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/environ"
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if b, err := os.ReadFile(environ); err == nil && len(b) > 0 {
			break
		}
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	ticks, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, ticks
}

// TestIdentify: a process is the run's only when its start time and the run id in its
// environment both match what the runner recorded.
func TestIdentify(t *testing.T) {
	t.Parallel()
	cmd, ticks := sleeper(t, "AGENTPROOF_RUN_ID=run-7")
	pid := cmd.Process.Pid
	for _, tt := range []struct {
		name  string
		pid   int
		ticks uint64
		run   string
		err   string
	}{
		{"the run's process", pid, ticks, "run-7", ""},
		{"another start time (a reused pid)", pid, ticks + 1, "run-7", "another process"},
		{"another run", pid, ticks, "run-8", "does not name run run-8"},
		{"run-7 is not a prefix match", pid, ticks, "run-", "does not name run"},
		{"no recorded pid", 0, ticks, "run-7", "no recorded pid"},
		{"init is never a target", 1, ticks, "run-7", "no recorded pid"},
	} {
		err := identify(tt.pid, tt.ticks, tt.run)
		if (tt.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: identify = %v, want %q", tt.name, err, tt.err)
		}
	}
}

// impostor is a board whose heartbeat records name, for every run of the state, a
// process that is not the run's (a sleep without the run id in its environment).
type impostor struct {
	Board
	pid   int
	ticks uint64
}

func (b impostor) HeartbeatRuns(ctx context.Context) ([]api.HeartbeatRun, error) {
	st, err := b.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	var out []api.HeartbeatRun
	for _, r := range st.Runs {
		if r.Status == "running" {
			out = append(out, api.HeartbeatRun{RunID: r.ID, State: api.RunLaunching, Launch: &api.LaunchFacts{PID: b.pid, ProcessStartTicks: b.ticks}})
		}
	}
	return out, nil
}

// alive reports whether cmd's process still runs: it exists and is not a zombie (a
// killed child stays a zombie until it is waited for).
func alive(cmd *exec.Cmd) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}
