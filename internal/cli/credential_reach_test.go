package cli

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// nobody is the unprivileged user the tests that need one run agentproof as.
const nobody = "65534"

// asNobody prepares a run of this test binary as `agentproof` by the unprivileged user
// nobody (setpriv, so the test needs root): a copy of the binary that user can execute
// in a fresh directory they own, with their own HOME and TMPDIR in it. It returns the
// directory and the command's prefix (setpriv … <dir>/bin/agentproof). A test that is
// not root skips, saying why; in CI (root) it always runs.
func asNobody(t *testing.T) (dir string, argv []string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running agentproof as another user needs root (setpriv)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("setpriv (util-linux) is needed to run agentproof as an unprivileged user: %v", err)
	}
	dir, err = os.MkdirTemp("", "apnobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	for _, d := range []string{"bin", "home", "tmp", "work"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyExecutable(t, self, filepath.Join(dir, "bin", "agentproof"))
	for _, p := range []string{dir, filepath.Join(dir, "home"), filepath.Join(dir, "tmp"), filepath.Join(dir, "work")} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, []string{setpriv, "--reuid=" + nobody, "--regid=" + nobody, "--clear-groups", filepath.Join(dir, "bin", "agentproof")}
}

// copyExecutable copies the file src to dst, mode 0755.
func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCredentialsOutOfReachUnprivileged: run by an unprivileged user, with two
// declared credentials exported, `agentproof run` re-executes itself without them
// and is not dumpable, so its exec agent (the same user, granted nothing) can open
// neither run's memory nor its environ (run is its parent, or its grandparent under a
// serve child), finds no credential, and passes. The agent and catalog are those of
// testdata/script/credential_reach.txtar.
func TestCredentialsOutOfReachUnprivileged(t *testing.T) {
	if testing.Short() {
		t.Skip("a campaign as another user")
	}
	t.Parallel()
	dir, argv := asNobody(t)
	ar, err := txtar.ParseFile(filepath.Join("testdata", "script", "credential_reach.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	for _, f := range ar.Files {
		text := strings.NewReplacer("${WORK}", work, "${EXAMPLES}", examples).Replace(string(f.Data))
		p := filepath.Join(work, f.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "reach", "given.txt"), []byte("other-token-9e8d7c6b5a4f3e2d1c0b"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], append(argv[1:], "run", "--catalog", "reach", "--suite", "reach", "--results", "res", "--campaign", "nd", "--progress", "plain", "--max-parallel", "1")...)
	cmd.Dir = work
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + filepath.Join(dir, "home"), "TMPDIR=" + filepath.Join(dir, "tmp"),
		"OPENAI_API_KEY=sk-reach-5f1c9a7e3b2d4f60a8c1e2d3f4a5b6c7", "APF_OTHER_TOKEN=other-token-9e8d7c6b5a4f3e2d1c0b"}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Campaign nd: 4/4 passed, 0 failed, 0 inconclusive") {
		t.Fatalf("run as %s: %v\n%s", nobody, err, out)
	}
	// run is the agent's parent with an in-process instance, its grandparent under a
	// serve child (which holds no credential: its environment is explicit).
	for c, level := range map[string]string{"reach-marker": "1", "reach-served": "2"} {
		log, err := os.ReadFile(filepath.Join(work, "res", "nd", "reach", "reader", "local", c, "attempt-1", "logs", "agent", "runs", "hb-company-0001-fixture-wake-0001", "stdout.log"))
		if err != nil {
			t.Fatal(err)
		}
		for _, what := range []string{"mem", "environ"} {
			want := regexp.MustCompile("(?m)^reach: parent " + level + ": " + what + " Permission denied$")
			if !want.Match(log) {
				t.Errorf("%s: the agent could open run's %s (its parent %s):\n%s", c, what, level, log)
			}
		}
		if !strings.Contains(string(log), "above me: no credential") {
			t.Errorf("%s: the agent found a credential:\n%s", c, log)
		}
	}
}
