package catalog

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// execProfile replaces the base catalog's exec:codex profile by an exec profile with
// the given driverConfig lines (indented under driverConfig:).
func execProfile(t *testing.T, config string) string {
	t.Helper()
	a := mustReplace(t, baseA, "    driver: exec:codex\n", "    driver: exec\n")
	return mustReplace(t, a, "    driverConfig:\n      env:\n        OPENAI_API_KEY: {type: secret_ref, secretId: OPENAI_API_KEY, version: latest}\n",
		"    driverConfig:\n"+config)
}

// TestExecDriverConfig: an exec profile's driverConfig is checked when the catalog
// loads (what validate and every command do before anything starts): the command must
// be an absolute path to an existing executable file, args strings using only the
// exec placeholders, timeouts and byte budgets whole numbers within bounds, and no
// other key; each problem names file:line of its key or list item.
func TestExecDriverConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.txt")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "agent.fifo")
	if err := syscall.Mkfifo(fifo, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, config string
		want         []string // regexps, each must match a problem line
	}{
		{"valid", "      command: /bin/true\n      args: [\"--dir={{workspace}}\", \"{{runId}}\"]\n      timeoutMs: 60000\n      maxOutputBytes: 65536\n", nil},
		{"no command", "      timeoutMs: 1000\n",
			[]string{`^a\.yaml:\d+:\d+: profile agent driverConfig\.command \(the absolute path of the agent's executable\) is required`}},
		{"relative command", "      command: bin/agent\n",
			[]string{`^a\.yaml:20:16: profile agent driverConfig\.command "bin/agent" must be an absolute path \(no PATH lookup, no shell\)`}},
		{"command not a string", "      command: [/bin/true]\n",
			[]string{`^a\.yaml:20:16: profile agent driverConfig\.command must be an absolute path, not a list`}},
		{"missing command", "      command: /nonexistent/agentproof-agent\n",
			[]string{`^a\.yaml:20:16: profile agent driverConfig\.command /nonexistent/agentproof-agent does not exist or cannot be read: no such file or directory`}},
		{"directory command", "      command: " + dir + "\n",
			[]string{`^a\.yaml:20:16: profile agent driverConfig\.command .* is a directory`}},
		{"not executable", "      command: " + plain + "\n",
			[]string{`^a\.yaml:20:16: profile agent driverConfig\.command .*plain\.txt is not executable \(mode 0644\)`}},
		{"FIFO command", "      command: " + fifo + "\n",
			[]string{`^a\.yaml:20:16: profile agent driverConfig\.command .*agent\.fifo is a named pipe \(FIFO\), not an executable regular file`}},
		{"args not a list", "      command: /bin/true\n      args: --flag\n",
			[]string{`^a\.yaml:21:13: profile agent driverConfig\.args must be a list of strings`}},
		{"args not strings", "      command: /bin/true\n      args:\n        - ok\n        - 42\n        - {a: b}\n",
			[]string{`^a\.yaml:23:11: profile agent driverConfig\.args\[1\] must be a string, not 42`, `^a\.yaml:24:11: profile agent driverConfig\.args\[2\] must be a string, not a mapping`}},
		{"args with the run token", "      command: /bin/true\n      args: [\"{{runToken}}\"]\n",
			[]string{`^a\.yaml:21:14: profile agent driverConfig\.args\[0\] uses \{\{runToken\}\}; args may use only apiUrl, runId, stateDir, taskId, workspace`}},
		{"zero timeout", "      command: /bin/true\n      timeoutMs: 0\n",
			[]string{`^a\.yaml:21:18: profile agent driverConfig\.timeoutMs must be a whole number of milliseconds in 1\.\.86400000 \(24 hours\), not 0`}},
		{"negative timeout", "      command: /bin/true\n      timeoutMs: -5\n",
			[]string{`driverConfig\.timeoutMs must be a whole number of milliseconds in 1\.\.86400000 \(24 hours\), not -5`}},
		{"fractional timeout", "      command: /bin/true\n      timeoutMs: 1.5\n",
			[]string{`driverConfig\.timeoutMs must be .*, not 1\.5`}},
		{"huge timeout", "      command: /bin/true\n      timeoutMs: 99999999999999999999\n",
			[]string{`driverConfig\.timeoutMs must be a whole number of milliseconds in 1\.\.86400000`}},
		{"string timeout", "      command: /bin/true\n      timeoutMs: \"1000\"\n",
			[]string{`driverConfig\.timeoutMs must be .*, not the string "1000"`}},
		{"zero output budget", "      command: /bin/true\n      maxOutputBytes: 0\n",
			[]string{`^a\.yaml:21:23: profile agent driverConfig\.maxOutputBytes must be a whole number of bytes in 1\.\.67108864 \(64 MiB\), not 0`}},
		{"output budget too big", "      command: /bin/true\n      maxOutputBytes: 67108865\n",
			[]string{`driverConfig\.maxOutputBytes must be a whole number of bytes in 1\.\.67108864 \(64 MiB\), not 67108865`}},
		{"unknown key", "      command: /bin/true\n      shell: true\n",
			[]string{`^a\.yaml:21:14: profile agent driverConfig: unknown key "shell" for driver exec \(keys: args, command, env, maxOutputBytes, timeoutMs\)`}},
		{"bad env name", "      command: /bin/true\n      env:\n        \"BAD-NAME\": {type: secret_ref, secretId: OPENAI_API_KEY, version: latest}\n",
			[]string{`driverConfig\.env name "BAD-NAME" is not an environment variable name`}},
		{"every problem together", "      command: relative\n      timeoutMs: 0\n      maxOutputBytes: -1\n",
			[]string{`driverConfig\.command "relative" must be an absolute path`, `driverConfig\.timeoutMs must be`, `driverConfig\.maxOutputBytes must be`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := loadFiles(map[string]string{"a.yaml": execProfile(t, tt.config), "b.yaml": baseB})
			if tt.want == nil {
				if err != nil {
					t.Fatalf("valid exec profile refused: %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Load error = %v (%T), want *ValidationError", err, err)
			}
			var lines []string
			for _, p := range ve.Problems {
				lines = append(lines, p.String())
			}
			for _, w := range tt.want {
				re := regexp.MustCompile(w)
				found := false
				for _, l := range lines {
					found = found || re.MatchString(l)
				}
				if !found {
					t.Errorf("no problem matches %q; problems:\n%s", w, strings.Join(lines, "\n"))
				}
			}
		})
	}
}

// loadDirWithin runs LoadDir in a goroutine and fails the test when it has not
// returned after a long bound: a FIFO opened for reading blocks until a writer comes.
func loadDirWithin(t *testing.T, dir string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := LoadDir(dir)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("LoadDir(%s) did not return: it is blocked reading a non-regular file", dir)
		return nil
	}
}

// TestLoadDirRefusesNonRegularFiles: a named pipe, a socket or a device under
// --catalog (directly, or through a symbolic link) is a problem naming the file, and is
// never read: a real FIFO with no writer does not hang loading. A FIFO named by
// --catalog itself is refused the same way. Files Load would not read (not *.yaml) are
// ignored as before.
func TestLoadDirRefusesNonRegularFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{"a.yaml": baseA, "b.yaml": baseB} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := loadDirWithin(t, dir); err != nil {
		t.Fatalf("the regular catalog does not load: %v", err)
	}
	fifo := filepath.Join(dir, "c.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "notes.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fifo, filepath.Join(sub, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(sub, "zero.yaml")); err != nil {
		t.Fatal(err)
	}
	// A socket path must be short (108 bytes); the test's temp dir may be longer.
	sockDir, err := os.MkdirTemp("", "apc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	ln, err := net.Listen("unix", filepath.Join(sockDir, "s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	if err := os.Symlink(filepath.Join(sockDir, "s.yaml"), filepath.Join(sub, "socket.yaml")); err != nil {
		t.Fatal(err)
	}

	err = loadDirWithin(t, dir)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("LoadDir error = %v (%T), want *ValidationError", err, err)
	}
	want := map[string]string{
		filepath.Join(dir, "c.yaml"):             "is a named pipe (FIFO), not a regular file",
		filepath.Join(dir, "sub", "link.yaml"):   "is a named pipe (FIFO), not a regular file",
		filepath.Join(dir, "sub", "zero.yaml"):   "is a character device, not a regular file",
		filepath.Join(dir, "sub", "socket.yaml"): "is a socket, not a regular file",
	}
	got := map[string]string{}
	for _, p := range ve.Problems {
		got[p.File] = p.Message
	}
	for file, msg := range want {
		if !strings.Contains(got[file], msg) {
			t.Errorf("%s: problem %q, want %q; problems:\n%v", file, got[file], msg, err)
		}
	}
	if len(ve.Problems) != len(want) {
		t.Errorf("%d problems, want %d:\n%v", len(ve.Problems), len(want), err)
	}

	// --catalog naming a FIFO itself.
	err = loadDirWithin(t, fifo)
	if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].File != fifo ||
		!strings.Contains(ve.Problems[0].Message, "named pipe") {
		t.Errorf("LoadDir(FIFO) = %v, want one problem naming %s", err, fifo)
	}
	if fmt.Sprint(err) == "" {
		t.Error("empty error")
	}
}
