package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/evidence"
	"github.com/agentproof/agentproof/internal/raceexit"
)

// The test binary doubles as the real programs the worker runs, so every test spawns
// real child processes running the real fixture code:
//
//	<test binary> fixture-child <fixture> <lifetime-ms>   the fixture program (RunChild)
//	<test binary> hostile-leader <setsid|group|orphan>    starts a grandchild that keeps
//	                                                      fd 1/2 (in a new session for setsid),
//	                                                      then ignores SIGTERM and sleeps, or
//	                                                      (orphan) exits 0 at once
//	<test binary> hostile-grandchild                      writes "tick" every 200 ms forever
//	AGENTPROOF_TEST_MODE=controller <test binary> …       a controller the tests SIGKILL
//	<dir fault-<mode>>/<copy of the test binary> fixture-child --gate …
//	                                                      a guarded child with a start-up
//	                                                      fault (see runFault): the fault is
//	                                                      the name of the copy's directory,
//	                                                      because a guarded child's argv and
//	                                                      environment are fixed
func TestMain(m *testing.M) {
	// As a child process, this binary exits without the race detector's sleep.
	raceexit.Main()
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "fixture-child":
			if mode := faultMode(); mode != "" {
				os.Exit(runFault(mode))
			}
			if len(os.Args) > 2 && os.Args[2] == GateFlag {
				os.Exit(RunGate(os.Args[2:], ControlPipe(), os.Stdin, os.Stdout, os.Stderr))
			}
			os.Exit(RunChild(os.Args[2:], os.Stdin, os.Stdout, os.Stderr, os.Environ()))
		case "hostile-leader":
			os.Exit(hostileLeader(os.Args[2:]))
		case "hostile-grandchild":
			hostileGrandchild()
		case "claim-root":
			os.Exit(claimRoot(os.Args[2]))
		}
	}
	if os.Getenv("AGENTPROOF_TEST_MODE") == "controller" {
		os.Exit(controller())
	}
	os.Exit(m.Run())
}

func hostileLeader(args []string) int {
	self, err := os.Executable()
	if err != nil {
		return 3
	}
	signal.Ignore(syscall.SIGTERM)
	gc := &exec.Cmd{
		Path:        self,
		Args:        []string{self, "hostile-grandchild"},
		Env:         os.Environ(),
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setsid: len(args) > 0 && args[0] == "setsid"},
	}
	if err := gc.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "hostile-leader:", err)
		return 3
	}
	fmt.Printf("grandchild pid=%d\n", gc.Process.Pid)
	if len(args) > 0 && args[0] == "orphan" {
		return 0 // leave the grandchild behind in the group, holding fd 1 and 2
	}
	for {
		time.Sleep(time.Hour)
	}
}

func hostileGrandchild() {
	// Never reads stdin and never exits by itself: only a signal or a broken pipe
	// (default SIGPIPE on fd 1) ends it.
	for {
		fmt.Println("tick")
		time.Sleep(200 * time.Millisecond)
	}
}

// controllerArgs is what the test passes a controller through AGENTPROOF_TEST_CONTROLLER.
type controllerArgs struct {
	Kind     string // "fixture" (Worker.Run hang) or "hostile" (Supervise hostile-leader setsid)
	Root     string
	Evidence string
	Marker   string
}

func controller() int {
	var a controllerArgs
	if err := json.Unmarshal([]byte(os.Getenv("AGENTPROOF_TEST_CONTROLLER")), &a); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		return 3
	}
	self, err := os.Executable()
	if err != nil {
		return 3
	}
	switch a.Kind {
	case "fixture":
		store, err := evidence.Open(a.Evidence)
		if err != nil {
			return 3
		}
		w, err := New(Options{Store: store, WorkspaceRoot: a.Root, Program: self})
		if err != nil {
			return 3
		}
		_, _ = w.Run(context.Background(), Request{Fixture: "hang", Pins: testPins(), Check: "controller", TimeoutMs: 60_000, MaxOutputBytes: 4096})
	case "hostile":
		_, _ = Supervise(context.Background(), Spec{
			Path: self, Args: []string{"agentproof", "hostile-leader", "setsid"},
			Env: []string{"AGENTPROOF_TEST_MARKER=" + a.Marker}, Dir: a.Root,
			Timeout: time.Minute, MaxOutputBytes: 1 << 20,
		})
	}
	return 0
}

func testPins() evidence.Pins {
	return evidence.Pins{Collector: evidence.LocalFixtureCollector, Environment: "go-test/linux"}
}

func selfPath(t testing.TB) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// proc is one entry of /proc.
type proc struct {
	pid, ppid int
	state     string
	cmdline   string
	environ   string
	cwd       string
}

// processes lists the live processes readable in /proc.
func processes() []proc {
	entries, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p, ok := readProc(pid)
		if ok {
			out = append(out, p)
		}
	}
	return out
}

func readProc(pid int) (proc, bool) {
	base := filepath.Join("/proc", strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(base, "stat"))
	if err != nil {
		return proc{}, false
	}
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return proc{}, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	cmd, _ := os.ReadFile(filepath.Join(base, "cmdline"))
	env, _ := os.ReadFile(filepath.Join(base, "environ"))
	cwd, _ := os.Readlink(filepath.Join(base, "cwd"))
	return proc{pid: pid, ppid: ppid, state: f[0],
		cmdline: strings.ReplaceAll(string(cmd), "\x00", " "), environ: string(env), cwd: cwd}, true
}

// alive reports whether pid exists and is not a zombie (a zombie has exited).
func alive(pid int) bool {
	p, ok := readProc(pid)
	return ok && p.state != "Z" && p.state != "X"
}

// waitFor polls cond every 10 ms until it holds or limit passes, and reports whether it
// held. It bounds how long a test waits; it never measures speed.
func waitFor(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
