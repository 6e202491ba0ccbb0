package hostile

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
