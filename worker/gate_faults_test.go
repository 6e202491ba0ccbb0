package worker

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Start-up faults of a guarded child (a gate that dies, a program that never loads, one that fails to start).
// A fault program is a copy of the test binary in a directory named fault-<mode>.
const (
	faultDieBeforeAdmission = "die-before-admission" // exits 9 before the gate runs
	faultSlowAdmission      = "slow-admission"       // sleeps before the gate runs
	faultNeverLoaded        = "never-loaded"         // admitted, then exits 0 without running the program
	faultBrokenEntry        = "broken-entry"         // admitted, then the entry panics (exit 2)
	faultMalformed          = "malformed"            // writes a foreign record, then runs the real gate
)

// faultMode returns the fault this process was started for, or "".
func faultMode() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	mode, ok := strings.CutPrefix(filepath.Base(filepath.Dir(exe)), "fault-")
	if !ok {
		return ""
	}
	return mode
}

func runFault(mode string) int {
	control := ControlPipe()
	switch mode {
	case faultDieBeforeAdmission:
		return 9
	case faultSlowAdmission:
		time.Sleep(10 * time.Minute)
		return 9
	case faultMalformed:
		if control != nil {
			_, _ = io.WriteString(control, "sf-fixture-gate/1 admitted someone-else\n")
		}
		return RunGate(os.Args[2:], control, os.Stdin, os.Stdout, os.Stderr)
	case faultNeverLoaded, faultBrokenEntry:
		id, err := parseLabel([]byte(os.Getenv(GateEnv)))
		if err != nil || control == nil {
			return 8
		}
		if _, err := gateHoldFence(id, GateWaitMS*time.Millisecond); err != nil {
			return 8
		}
		_, _ = io.WriteString(control, AdmissionRecord(id.Nonce))
		if mode == faultBrokenEntry {
			panic("broken entry: the fixture program failed to load")
		}
		return 0
	}
	return 7
}

// faultProgram copies the test binary to <tmp>/fault-<mode>/agentproof and returns its path.
func faultProgram(t *testing.T, mode string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fault-"+mode)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return copyProgram(t, filepath.Join(dir, "agentproof"))
}

// copyProgram copies the test binary to path (mode 0o755) and returns path.
func copyProgram(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(selfPath(t))
	if err != nil {
		t.Fatal(err)
	}
	writeExecutable(t, path, data)
	return path
}

// writeExecutable writes an executable file while holding syscall.ForkLock for reading:
// no process is forked while the write descriptor is open, so no concurrently started
// child inherits it (which would make executing the file fail with ETXTBSY).
func writeExecutable(t *testing.T, path string, data []byte) {
	t.Helper()
	syscall.ForkLock.RLock()
	err := os.WriteFile(path, data, 0o755)
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
}
