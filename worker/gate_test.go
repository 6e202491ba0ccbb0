package worker

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGateDirect runs the real gate (`fixture-child --gate …`) as a process of its own
// and reads its control pipe: admission then payload on success, a refusal record and
// exit 123 otherwise.
func TestGateDirect(t *testing.T) {
	t.Parallel()
	type setup struct {
		args    []string
		env     []string
		control bool
	}
	tests := []struct {
		name     string
		prepare  func(t *testing.T, id FenceIdentity, s *setup)
		wantExit int
		want     func(id FenceIdentity) string // exact control content, or a prefix ending in "…"
	}{
		{"admitted", func(*testing.T, FenceIdentity, *setup) {}, ExitPass,
			func(id FenceIdentity) string { return AdmissionRecord(id.Nonce) + PayloadRecord(id.Nonce) }},
		{"relabelled identity", func(_ *testing.T, id FenceIdentity, s *setup) {
			id.Nonce = strings.Repeat("ee", 16)
			s.env[len(s.env)-1] = GateEnv + "=" + string(id.label())
		}, GateRefusedExit, func(FenceIdentity) string { return GateRefusalPrefix + "the fence is labelled for attempt…" }},
		{"no identity", func(_ *testing.T, _ FenceIdentity, s *setup) { s.env = s.env[:len(s.env)-1] }, GateRefusedExit,
			func(FenceIdentity) string { return GateRefusalPrefix + GateEnv + " is not set\n" }},
		{"malformed identity", func(_ *testing.T, _ FenceIdentity, s *setup) { s.env[len(s.env)-1] = GateEnv + `={"runId":1}` }, GateRefusedExit,
			func(FenceIdentity) string {
				return GateRefusalPrefix + GateEnv + ": invalid fence: label is not a fence identity…"
			}},
		{"fence outside the grant", func(t *testing.T, _ FenceIdentity, s *setup) { s.args[2] = t.TempDir() }, GateRefusedExit,
			func(FenceIdentity) string { return GateRefusalPrefix + "the fence /…" }},
		{"fence directory not dedicated", func(t *testing.T, id FenceIdentity, _ *setup) {
			if err := os.WriteFile(filepath.Join(filepath.Dir(id.Path), "x"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, GateRefusedExit, func(FenceIdentity) string { return GateRefusalPrefix + "invalid fence: fence directory…" }},
		{"program refuses its arguments", func(_ *testing.T, _ FenceIdentity, s *setup) { s.args[4] = "0" }, ExitUsage,
			func(id FenceIdentity) string { return AdmissionRecord(id.Nonce) }},
		{"no control pipe", func(_ *testing.T, _ FenceIdentity, s *setup) { s.control = false }, GateRefusedExit,
			func(FenceIdentity) string { return "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id, err := NewFenceIdentity("run-gate", 0, "w", filepath.Join(t.TempDir(), "f", "fence"))
			if err != nil {
				t.Fatal(err)
			}
			if err := ProvisionFence(id); err != nil {
				t.Fatal(err)
			}
			s := setup{
				args:    []string{"fixture-child", GateFlag, filepath.Dir(id.Path), "pass", "60000"},
				env:     append(ChildEnvironment(), GateEnv+"="+string(id.label())),
				control: true,
			}
			tt.prepare(t, id, &s)
			cmd := exec.Command(selfPath(t), s.args...)
			cmd.Env = s.env
			cmd.Dir = t.TempDir()
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			var r *os.File
			if s.control {
				var w *os.File
				if r, w, err = os.Pipe(); err != nil {
					t.Fatal(err)
				}
				cmd.ExtraFiles = []*os.File{w}
				defer r.Close()
				defer w.Close()
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if s.control {
				_ = cmd.ExtraFiles[0].Close()
			}
			var control []byte
			if r != nil {
				control, _ = io.ReadAll(io.LimitReader(r, MaxControlBytes+1))
			}
			err = cmd.Wait()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantExit {
				t.Errorf("exit %d, want %d (control %q)", code, tt.wantExit, control)
			}
			want := tt.want(id)
			if prefix, ok := strings.CutSuffix(want, "…"); ok {
				if !bytes.HasPrefix(control, []byte(prefix)) || !bytes.HasSuffix(control, []byte("\n")) || bytes.Count(control, []byte("\n")) != 1 {
					t.Errorf("control %q, want one record starting %q", control, prefix)
				}
			} else if string(control) != want {
				t.Errorf("control %q, want %q", control, want)
			}
			if len(control) > MaxControlBytes {
				t.Errorf("control records longer than %d bytes", MaxControlBytes)
			}
			admitted := tt.wantExit == ExitPass
			if ran := bytes.Contains(stdout.Bytes(), []byte("sf-fixture-child/1")); ran != admitted {
				t.Errorf("fixture ran=%v, want %v:\n%s", ran, admitted, stdout.Bytes())
			}
			if admitted && !bytes.Contains(stdout.Bytes(), []byte("env names: GOMAXPROCS GOMEMLIMIT LANG PATH TZ\n")) {
				t.Errorf("the gate did not delete %s before the fixture ran:\n%s", GateEnv, stdout.Bytes())
			}
		})
	}
}

func TestControlVerdict(t *testing.T) {
	t.Parallel()
	n := strings.Repeat("ab", 16)
	tests := []struct {
		name     string
		data     string
		overflow bool
		open     bool
		want     string
	}{
		{"admitted and started", AdmissionRecord(n) + PayloadRecord(n), false, false, ""},
		{"another nonce", AdmissionRecord("x") + PayloadRecord("x"), false, false, "malformed"},
		{"payload before admission", PayloadRecord(n) + AdmissionRecord(n), false, false, "malformed"},
		{"duplicate payload", AdmissionRecord(n) + PayloadRecord(n) + PayloadRecord(n), false, false, "malformed"},
		{"refused", GateRefusalPrefix + "busy\n", false, false, "gate: refused: busy"},
		{"nothing", "", false, false, "died before admission"},
		{"admission only", AdmissionRecord(n), false, false, "never confirmed to start"},
		{"too long", AdmissionRecord(n) + PayloadRecord(n), true, false, "more than 256 bytes"},
		{"left open", AdmissionRecord(n) + PayloadRecord(n), false, true, "stayed open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := controlVerdict([]byte(tt.data), tt.overflow, tt.open, n)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("controlVerdict = %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzParseFenceLabel(f *testing.F) {
	id := FenceIdentity{RunID: "r", Epoch: 1, AttemptID: "r/1", Worker: "w", Nonce: strings.Repeat("0", 32), Path: "/f/fence"}
	f.Add(id.label())
	f.Add([]byte(`{"runId":"r"}`))
	f.Add([]byte(`{} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseLabel(data)
		if err != nil {
			return
		}
		if _, err := ParseFenceIdentity(got); err != nil {
			t.Fatalf("accepted an invalid identity: %v", err)
		}
		if !bytes.Equal(got.label(), data) {
			t.Fatalf("accepted a non-canonical label %q", data)
		}
	})
}
