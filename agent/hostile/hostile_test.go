package hostile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func run(t *testing.T, args ...string) (int, Report) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(args, &out, &errb)
	var r Report
	if code != ExitUsage {
		if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &r); err != nil {
			t.Fatalf("%v: %q %q", err, out.String(), errb.String())
		}
	}
	return code, r
}

// TestAttacksUncontained: without a sandbox (what the local environment offers) the
// attacks succeed and say so with exit 1; against a closed door they are contained
// with exit 0. This is the calibration of the hostile agent itself: an attack that
// could not succeed anywhere would prove nothing about a sandbox.
func TestAttacksUncontained(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := filepath.Join(dir, "board-token")
	if err := os.WriteFile(secret, []byte("tok-123"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	defer ln.Close()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	_ = closed.Close()
	rows := []struct {
		args      []string
		code      int
		contained bool
		output    string
	}{
		{[]string{"read", secret}, ExitEscaped, false, "tok-123"},
		{[]string{"read", filepath.Join(dir, "absent")}, ExitContained, true, ""},
		{[]string{"proc-environ", strconv.Itoa(os.Getppid()), "PATH"}, ExitEscaped, false, ""},
		{[]string{"proc-environ", "self", "HOSTILE_ABSENT_MARKER"}, ExitContained, true, ""},
		{[]string{"connect", ln.Addr().String()}, ExitEscaped, false, ""},
		{[]string{"connect", closedAddr}, ExitContained, true, ""},
		{[]string{"write", filepath.Join(dir, "w")}, ExitEscaped, false, ""},
		{[]string{"write", filepath.Join(dir, "no", "w")}, ExitContained, true, ""},
		{[]string{"memory", "1"}, ExitEscaped, false, ""},
		{[]string{"diskfill", dir, "100"}, ExitEscaped, false, ""},
		{[]string{"facts"}, ExitContained, true, "uid="},
	}
	for _, r := range rows {
		code, rep := run(t, r.args...)
		if code != r.code || rep.Contained != r.contained || !strings.Contains(rep.Output, r.output) || rep.Attack != r.args[0] {
			t.Errorf("%v: exit %d, contained %v, detail %q", r.args, code, rep.Contained, rep.Detail)
		}
	}
	for _, bad := range [][]string{nil, {"read"}, {"forkbomb", "x"}, {"nope"}, {"daemon", "soon"}, {"memory", "-1"}} {
		if code, _ := run(t, bad...); code != ExitUsage {
			t.Errorf("%v: exit %d, want usage", bad, code)
		}
	}
}

// TestSuiteAttacksUncontained: the suite's attacks on targets within reach (what local
// offers) escape and show what they got; without a target, or against a closed one,
// they are contained. diskfill and memory are left to the sandbox tests (they write
// and touch 4 GiB).
func TestSuiteAttacksUncontained(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("tripwire-secret\n"))
			_ = c.Close()
		}
	}()
	// A "controller": a process whose environment holds a variable we do not have.
	ctl := exec.Command("/usr/bin/sleep", "30")
	ctl.Env = []string{"PATH=/usr/bin:/bin", "CONTROLLER_KEY=ctl-secret"}
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ctl.Process.Kill(); _ = ctl.Wait() }()
	// Start returns once the exec is past its point of no return, a moment before the
	// kernel fills in the new program's environment: /proc/<pid>/environ reads empty
	// until then.
	environ := fmt.Sprintf("/proc/%d/environ", ctl.Process.Pid)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if b, err := os.ReadFile(environ); err == nil && len(b) > 0 {
			break
		}
	}
	own := []string{"PATH=/usr/bin:/bin"}
	rows := []struct {
		name      string
		attack    string
		target    Target
		contained bool
		output    string
	}{
		{"environ read", "proc-environ", Target{ControllerPID: ctl.Process.Pid, OwnEnv: own}, false, "CONTROLLER_KEY=ctl-secret"},
		{"environ: only what it was given", "proc-environ", Target{ControllerPID: ctl.Process.Pid, OwnEnv: append(own, "CONTROLLER_KEY=ctl-secret")}, true, ""},
		{"environ: no pid", "proc-environ", Target{}, true, ""},
		{"tripwire reached", "connect", Target{Tripwire: ln.Addr().String()}, false, "tripwire-secret"},
		{"no tripwire", "connect", Target{}, true, ""},
		{"outside written", "write-outside", Target{Outside: dir, Credentials: "K=v"}, false, ""},
		{"outside absent", "write-outside", Target{Outside: filepath.Join(dir, "absent"), Credentials: "K=v"}, true, ""},
		{"unknown", "nope", Target{}, true, ""},
	}
	for _, r := range rows {
		rep := RunSuite(r.attack, r.target)
		if rep.Contained != r.contained || !strings.Contains(rep.Output, r.output) || rep.Attack != r.attack {
			t.Errorf("%s: %+v", r.name, rep)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, SuiteOutsideFile)); err != nil || !strings.Contains(string(b), "K=v") {
		t.Errorf("outside file: %q, %v", b, err)
	}
}
