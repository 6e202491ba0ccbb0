package worker

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// shSpec is a Spec running /bin/sh -c script in dir with a marker.
func shSpec(t *testing.T, script string) Spec {
	t.Helper()
	return Spec{Path: "/bin/sh", Args: []string{"sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"},
		Dir: t.TempDir(), Timeout: 30 * time.Second, MaxOutputBytes: 1 << 16, Marker: NewMarker()}
}

// TestSuperviseKillsEscapedDescendants: a real setsid daemon and a grandchild that
// moved to its own process group outlive the agent's process group; Supervise finds
// them by the marker, kills them, lists them (pid and command, never the environment)
// and the daemon's hold on stdout no longer costs CloseGrace.
func TestSuperviseKillsEscapedDescendants(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pids")
	// Two escapers, both holding stdout: `setsid sleep &` (the background child makes
	// itself a session leader) and `setsid -f sleep` (forked into a new session). The
	// leader exits 0 soon after.
	spec := shSpec(t, "setsid sleep 300 & echo $! > "+pidFile+"; setsid -f sleep 301; sleep 0.3; exit 0")
	spec.CloseGrace = 20 * time.Second // without the sweep the daemons would hold stdout this long
	o, err := Supervise(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if o.ExitCode == nil || *o.ExitCode != 0 || !o.StdioClosed || o.CollectorError != "" {
		t.Fatalf("outcome: exit %v stdioClosed %v collector %q", o.ExitCode, o.StdioClosed, o.CollectorError)
	}
	if o.Duration > 10*time.Second {
		t.Errorf("the run took %v: the daemons held stdout until CloseGrace", o.Duration)
	}
	if len(o.Escaped) != 2 {
		t.Fatalf("escaped = %+v, want the two setsid sleeps", o.Escaped)
	}
	for _, e := range o.Escaped {
		if (e.Command != "sleep" && e.Command != "setsid") || !e.Killed || e.PID <= 0 {
			t.Errorf("escaped %+v, want a killed sleep", e)
		}
		if alive(e.PID) {
			t.Errorf("escaped process %d still alive", e.PID)
		}
	}
	b, _ := os.ReadFile(pidFile)
	if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid != o.Escaped[0].PID && pid != o.Escaped[1].PID {
		t.Errorf("the setsid daemon %d is not among %+v", pid, o.Escaped)
	}
}

// TestSuperviseGroupMembersAreNotEscapees: children that stay in the process group are
// killed with the group and are not reported as escaped.
func TestSuperviseGroupMembersAreNotEscapees(t *testing.T) {
	t.Parallel()
	spec := shSpec(t, "sleep 300 >/dev/null 2>&1 & sleep 300 >/dev/null 2>&1 & exit 0")
	o, err := Supervise(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Escaped) != 0 || o.CollectorError != "" {
		t.Errorf("escaped %+v, collector %q: group members are not escapees", o.Escaped, o.CollectorError)
	}
}

// TestSuperviseMarkerEnvironment: the marker reaches the child's environment (own
// marker first, then the extra ones), and a Spec whose Env sets MarkerVar or whose
// markers are malformed is refused.
func TestSuperviseMarkerEnvironment(t *testing.T) {
	t.Parallel()
	spec := shSpec(t, `printf '%s' "$`+MarkerVar+`"`)
	attempt := NewMarker()
	spec.ExtraMarkers = []string{attempt}
	o, err := Supervise(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(o.Output.Stdout()), spec.Marker+","+attempt; got != want {
		t.Errorf("child saw %s=%q, want %q", MarkerVar, got, want)
	}
	for _, bad := range []Spec{
		func() Spec { s := shSpec(t, "true"); s.Env = append(s.Env, MarkerVar+"=x"); return s }(),
		func() Spec { s := shSpec(t, "true"); s.Marker = "Not A Marker"; return s }(),
		func() Spec { s := shSpec(t, "true"); s.ExtraMarkers = []string{"x"}; return s }(),
		func() Spec { s := shSpec(t, "true"); s.ResultGrace = -time.Second; return s }(),
	} {
		if _, err := Supervise(context.Background(), bad); err == nil {
			t.Errorf("spec %+v accepted", bad)
		}
	}
}

// TestSweepMarkedFindsOnlyItsMarker: SweepMarked kills every process carrying the
// marker among its tokens (here an attempt's marker a process carries second) and no
// process carrying another marker.
func TestSweepMarkedFindsOnlyItsMarker(t *testing.T) {
	t.Parallel()
	attempt, other := NewMarker(), NewMarker()
	start := func(markers string) *os.Process {
		p, err := os.StartProcess("/bin/sleep", []string{"sleep", "300"}, &os.ProcAttr{Env: []string{MarkerVar + "=" + markers}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Kill(); _, _ = p.Wait() })
		return p
	}
	mine := start(NewMarker() + "," + attempt)
	theirs := start(other)
	found, err := SweepMarked(attempt, SweepConfirm)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].PID != mine.Pid || !found[0].Killed || found[0].Command != "sleep" {
		t.Fatalf("found %+v, want only %d", found, mine.Pid)
	}
	if st, err := mine.Wait(); err != nil || st.Sys().(interface{ Signaled() bool }).Signaled() == false {
		t.Errorf("the marked sleep was not killed: %v %v", st, err)
	}
	if p, ok := readProc(theirs.Pid); !ok || p.state == "Z" {
		t.Errorf("a process with another marker was killed")
	}
	if _, err := SweepMarked("bad marker", SweepConfirm); err == nil {
		t.Error("an invalid marker was accepted")
	}
}

// TestSweepMarkedExcept: a process the caller accounts for (skip true) is killed but
// not reported as escaped; every other marked process is reported.
func TestSweepMarkedExcept(t *testing.T) {
	t.Parallel()
	marker := NewMarker()
	start := func() *os.Process {
		p, err := os.StartProcess("/bin/sleep", []string{"sleep", "300"}, &os.ProcAttr{Env: []string{MarkerVar + "=" + marker}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Kill(); _, _ = p.Wait() })
		return p
	}
	known, escaped := start(), start()
	found, err := SweepMarkedExcept(marker, func(pid, _ int) bool { return pid == known.Pid }, SweepConfirm)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].PID != escaped.Pid || !found[0].Killed {
		t.Fatalf("found %+v, want only %d (the known %d left out)", found, escaped.Pid, known.Pid)
	}
	for _, p := range []*os.Process{known, escaped} {
		if st, err := p.Wait(); err != nil || !st.Sys().(interface{ Signaled() bool }).Signaled() {
			t.Errorf("process %d was not killed: %v %v", p.Pid, st, err)
		}
	}
	if _, err := SweepMarkedExcept("bad marker", nil, SweepConfirm); err == nil {
		t.Error("an invalid marker was accepted")
	}
}

// TestSuperviseStopsAfterResult: a process that printed its terminal result line and
// then does not exit is stopped ResultGrace later (not at its timeout), with
// StoppedAfterResult set; one that exits by itself after its result is not.
func TestSuperviseStopsAfterResult(t *testing.T) {
	t.Parallel()
	isResult := func(line []byte) bool { return bytes.Equal(line, []byte(`{"type":"result"}`)) }
	tests := []struct {
		name, script string
		stopped      bool
	}{
		{"lingers after its result", `echo '{"type":"step"}'; echo '{"type":"result"}'; exec sleep 300`, true},
		{"result split across writes", `printf '{"type":'; sleep 0.1; printf '"result"}\n'; exec sleep 300`, true},
		{"exits after its result", `echo '{"type":"result"}'; sleep 0.2; exit 0`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := shSpec(t, tt.script)
			spec.Timeout = 60 * time.Second
			spec.ResultLine, spec.ResultGrace = isResult, 300*time.Millisecond
			o, err := Supervise(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if !o.ResultSeen || o.StoppedAfterResult != tt.stopped || o.TimedOut {
				t.Fatalf("resultSeen %v stoppedAfterResult %v timedOut %v", o.ResultSeen, o.StoppedAfterResult, o.TimedOut)
			}
			if tt.stopped && (o.Duration > 30*time.Second || len(o.SignalsSent) == 0 || o.SignalsSent[0] != "SIGTERM") {
				t.Errorf("stopped after %v with %v; want SIGTERM soon after the result", o.Duration, o.SignalsSent)
			}
			if !tt.stopped && (o.ExitCode == nil || *o.ExitCode != 0 || len(o.SignalsSent) > 0) {
				t.Errorf("exit %v signals %v; want a clean exit", o.ExitCode, o.SignalsSent)
			}
		})
	}
}

// TestLineWatch: lines split anywhere reach the watcher whole; an oversized line is
// skipped and the next one still seen.
func TestLineWatch(t *testing.T) {
	t.Parallel()
	var lines []string
	w := &lineWatch{fired: make(chan struct{}), fn: func(l []byte) bool {
		lines = append(lines, string(l))
		return string(l) == "end"
	}}
	huge := bytes.Repeat([]byte("x"), MaxWatchedLineBytes+10)
	for _, chunk := range [][]byte{[]byte("a"), []byte("b\nc"), []byte("d\n"), huge[:len(huge)/2], huge[len(huge)/2:], []byte("\nen"), []byte("d\nafter\n")} {
		w.feed(chunk)
	}
	if got := strings.Join(lines, "|"); got != "ab|cd|end" || !w.seen() {
		t.Errorf("lines %q seen %v", got, w.seen())
	}
}
