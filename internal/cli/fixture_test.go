package cli

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/verdict"
)

func TestParseByteSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"65536", 65536, true},
		{"64KiB", 64 << 10, true},
		{"1MiB", 1 << 20, true},
		{"10B", 10, true},
		{"0", 0, true},
		{"1.5MiB", 0, false},
		{"-1", 0, false},
		{"1GiB", 0, false},
		{"", 0, false},
		{"KiB", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := parseByteSize(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("parseByteSize(%q) = %d, %v; want %d ok=%v", tt.in, got, err, tt.want, tt.ok)
			}
		})
	}
}

func FuzzParseByteSize(f *testing.F) {
	for _, s := range []string{"64KiB", "1MiB", "0", "999999999999MiB", "12 B", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseByteSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("parseByteSize(%q) = %d < 0", s, n)
		}
		if _, err := strconv.ParseInt(strconv.FormatInt(n, 10), 10, 64); err != nil {
			t.Fatal(err)
		}
	})
}

func TestFixtureRunUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"nul in evidence dir", []string{"--evidence-dir", dir + "/a\x00b"}, "--evidence-dir must not contain NUL"},
		{"nul in workspace root", []string{"--evidence-dir", dir, "--workspace-root", "/tmp/\x00"}, "--workspace-root must not contain NUL"},
		{"relative workspace root", []string{"--evidence-dir", dir, "--workspace-root", "ws"}, `--workspace-root "ws" must be an absolute path`},
		{"budget too big", []string{"--evidence-dir", dir, "--max-output", "65MiB"}, "--max-output 65MiB must be between"},
		{"sub-millisecond timeout", []string{"--evidence-dir", dir, "--timeout", "1500us"}, "--timeout 1.5ms must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			code := Main(append([]string{"fixture", "run", "pass"}, tt.args...), strings.NewReader(""), &out, &errb)
			if verdict.ExitCode(code) != ExitUsage || !strings.Contains(errb.String(), tt.want) {
				t.Errorf("exit %d stderr %q, want %d and %q", code, errb.String(), ExitUsage, tt.want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q, want nothing", out.String())
			}
		})
	}
}
