package main

import (
	"bufio"
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEarlyCommandsSkipInit checks that `agentproof sandbox-init` (run once per sandbox
// launch) exits before the packages the rest of the command line needs are initialised:
// none of the packages that import reflect (fmt, encoding/json, net, and through them
// the control plane, the MCP SDK, the stores, the schemas…) and are not imported by the
// sandbox's init is initialised, while `agentproof version` initialises them. It runs
// the built binary with GODEBUG=inittrace=1, which prints one line per initialised
// package.
func TestEarlyCommandsSkipInit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "agentproof")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	heavy := importersOf(t, "reflect")
	initOnly := inited(t, bin, 64, "sandbox-init") // malformed: exits 64 after parsing
	full := inited(t, bin, 0, "version")
	var skipped, ran []string
	for _, p := range heavy {
		if slices.Contains(full, p) {
			skipped = append(skipped, p)
		}
		if slices.Contains(initOnly, p) {
			ran = append(ran, p)
		}
	}
	if len(skipped) < 10 {
		t.Fatalf("agentproof version initialises only %d packages that import reflect (%v): the check would prove nothing", len(skipped), skipped)
	}
	if len(ran) > 0 {
		t.Errorf("sandbox-init initialised %d packages it does not need: %v", len(ran), ran)
	}
	if len(initOnly) >= len(full) {
		t.Errorf("sandbox-init initialised %d packages, version %d", len(initOnly), len(full))
	}
	t.Logf("sandbox-init initialises %d packages, version %d", len(initOnly), len(full))
}

// importersOf lists the packages linked into agentproof that import pkg (directly or
// not) and that the early commands (package internal/earlycmd) do not.
func importersOf(t *testing.T, pkg string) []string {
	t.Helper()
	early := map[string]bool{}
	for _, p := range goList(t, "-deps", "-f", "{{.ImportPath}}", "github.com/agentproof/agentproof/internal/earlycmd") {
		early[p] = true
	}
	var out []string
	for _, line := range goList(t, "-deps", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", ".") {
		f := strings.Fields(line)
		if len(f) > 1 && !early[f[0]] && slices.Contains(f[1:], pkg) {
			out = append(out, f[0])
		}
	}
	return out
}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// inited runs bin with args and GODEBUG=inittrace=1 and returns the packages it
// initialised, checking its exit code.
func inited(t *testing.T, bin string, code int, args ...string) []string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "GODEBUG=inittrace=1"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil && code != 0, err != nil && !errors.As(err, &ee), ee != nil && ee.ExitCode() != code:
		t.Fatalf("%s %v: %v (want exit %d): %s", bin, args, err, code, stderr.String())
	}
	var pkgs []string
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init <package> @<t> ms, …
		if f := strings.Fields(sc.Text()); len(f) > 2 && f[0] == "init" {
			pkgs = append(pkgs, f[1])
		}
	}
	return pkgs
}
