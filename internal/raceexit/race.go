//go:build race

package raceexit

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// sleepless is the GORACE value Main restarts the process with.
const sleepless = "atexit_sleep_ms=0"

// Var is the variable Main adds to the environment it restarts the process with. The
// process removes it from its own environment at once, but /proc/<pid>/environ (the
// environment as the kernel started the program) keeps it at its end.
const Var = "GORACE=" + sleepless

// Main restarts a race-built process without the race detector's sleep at exit (see
// the package comment). It returns in the restarted process, and at once when GORACE
// is set to anything else (the caller's own race options are left alone) or when the
// restart fails (the process then runs with the sleep, as it would without Main).
func Main() {
	v, set := os.LookupEnv("GORACE")
	switch {
	case set && v == sleepless:
		_ = os.Unsetenv("GORACE") // the restarted process: the variable is Main's, not the caller's
		return
	case set:
		return
	}
	exe := executable()
	if exe == "" {
		return
	}
	_ = syscall.Exec(exe, os.Args, append(os.Environ(), Var)) // returns only on failure
}

// executable is the path to restart: the one this process was started by when argv[0]
// names it (so that the process keeps its name in /proc), else the running executable.
func executable() string {
	if a := os.Args[0]; a != "" {
		p := a
		if filepath.Base(a) == a {
			p, _ = exec.LookPath(a)
		}
		if p != "" {
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				if self, err := os.Stat("/proc/self/exe"); err == nil && os.SameFile(st, self) {
					return p
				}
			}
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return exe
}
