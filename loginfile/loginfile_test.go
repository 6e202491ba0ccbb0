package loginfile_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/internal/raceexit"
	"github.com/agentproof/agentproof/loginfile"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/result"
)

// authJSON is a login file like a subscription CLI's auth.json.
const authJSON = `{"type":"subscription","access_token":"grok-sub-access-4f9c2a7e1b3d8c6f","refresh_token":"grok-sub-refresh-9e8d7c6b5a4f3e2d","user":"ci"}`

// fakeCLIEnv makes the test binary the fake CLI: it reads $HOME/.grok/auth.json, checks
// the modes, and prints its SHA-256 — and, when asked to misbehave, the file and its
// token (a hostile CLI printing its login).
const fakeCLIEnv = "LOGINFILE_FAKE_CLI"

func TestMain(m *testing.M) {
	// As a child process, this binary exits without the race detector's sleep.
	raceexit.Main()
	if mode := os.Getenv(fakeCLIEnv); mode != "" {
		os.Exit(fakeCLI(mode))
	}
	os.Exit(m.Run())
}

func fakeCLI(mode string) int {
	home := os.Getenv("HOME")
	path := filepath.Join(home, ".grok", "auth.json")
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Println("no login:", err)
		return 1
	}
	for p, want := range map[string]os.FileMode{home: 0o700, filepath.Dir(path): 0o700, path: 0o600} {
		if fi, err := os.Lstat(p); err != nil || fi.Mode().Perm() != want {
			fmt.Printf("bad mode of %s: %v %v\n", p, fi.Mode(), err)
			return 1
		}
	}
	var login struct {
		AccessToken string `json:"access_token"`
	}
	if json.Unmarshal(b, &login) != nil || login.AccessToken == "" {
		fmt.Println("login file does not parse")
		return 1
	}
	sum := sha256.Sum256(b)
	fmt.Println("logged in, auth.json sha256", hex.EncodeToString(sum[:]))
	if mode == "leak" {
		fmt.Println("debug: auth.json =", string(b))
		fmt.Println("debug: token", login.AccessToken)
	}
	return 0
}

func spec(t *testing.T) loginfile.Spec {
	t.Helper()
	root := t.TempDir()
	home, err := loginfile.CompanyHome(filepath.Join(root, "instance"), "company-0001")
	if err != nil {
		t.Fatal(err)
	}
	return loginfile.Spec{Root: root, Home: home, Path: ".grok/auth.json", Value: []byte(authJSON),
		Secrets: redact.NewSet("other-secret-value").With(loginfile.SecretValues([]byte(authJSON))...)}
}

// TestSeedFakeCLIReadsIt: the seeded HOME is 0700, the file 0600 with the exact bytes; a
// real child process (the fake CLI) with that HOME reads it; Destroy removes it and
// confirms.
func TestSeedFakeCLIReadsIt(t *testing.T) {
	t.Parallel()
	s := spec(t)
	seeded, err := loginfile.Seed(s)
	if err != nil {
		t.Fatal(err)
	}
	if seeded.File != filepath.Join(s.Home, ".grok", "auth.json") || seeded.Bytes != len(authJSON) {
		t.Errorf("seeded %+v", seeded)
	}
	if b, err := os.ReadFile(seeded.File); err != nil || string(b) != authJSON {
		t.Fatalf("file holds %q, %v", b, err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{"HOME=" + s.Home, fakeCLIEnv + "=read", "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	sum := sha256.Sum256([]byte(authJSON))
	if err != nil || !strings.Contains(string(out), "logged in, auth.json sha256 "+hex.EncodeToString(sum[:])) {
		t.Fatalf("fake CLI: %v\n%s", err, out)
	}
	td, err := seeded.Destroy()
	if err != nil || !td.Confirmed || !td.Overwritten {
		t.Fatalf("Destroy = %+v, %v", td, err)
	}
	if _, err := os.Lstat(s.Home); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("HOME still exists: %v", err)
	}
	// Destroying again is confirmed too (nothing there).
	if td, err := seeded.Destroy(); err != nil || !td.Confirmed {
		t.Fatalf("second Destroy = %+v, %v", td, err)
	}
}

// TestSeedRefuses: a HOME that is a symbolic link, already occupied, outside the
// attempt's tree or below a linked directory; a bad path; an empty, oversized or
// unregistered value. Nothing is created, and a refused HOME is left as it was.
func TestSeedRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		edit func(t *testing.T, s *loginfile.Spec)
		want error
		text string
	}{
		{name: "HOME is a symlink", want: loginfile.ErrSymlink, edit: func(t *testing.T, s *loginfile.Spec) {
			mkdirs(t, filepath.Dir(s.Home))
			if err := os.Symlink(t.TempDir(), s.Home); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "HOME is a dangling symlink", want: loginfile.ErrSymlink, edit: func(t *testing.T, s *loginfile.Spec) {
			mkdirs(t, filepath.Dir(s.Home))
			if err := os.Symlink(filepath.Join(t.TempDir(), "nowhere"), s.Home); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "HOME occupied by a directory", want: loginfile.ErrOccupied, edit: func(t *testing.T, s *loginfile.Spec) { mkdirs(t, s.Home) }},
		{name: "HOME occupied by a file", want: loginfile.ErrOccupied, edit: func(t *testing.T, s *loginfile.Spec) {
			mkdirs(t, filepath.Dir(s.Home))
			if err := os.WriteFile(s.Home, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "parent is a symlink", want: loginfile.ErrSymlink, edit: func(t *testing.T, s *loginfile.Spec) {
			mkdirs(t, filepath.Dir(filepath.Dir(s.Home)))
			if err := os.Symlink(t.TempDir(), filepath.Dir(s.Home)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "HOME outside the tree", want: loginfile.ErrOutsideTree, edit: func(t *testing.T, s *loginfile.Spec) { s.Home = filepath.Join(t.TempDir(), "home") }},
		{name: "HOME is the tree itself", want: loginfile.ErrOutsideTree, edit: func(t *testing.T, s *loginfile.Spec) { s.Home = s.Root }},
		{name: "HOME beside the tree", want: loginfile.ErrOutsideTree, edit: func(t *testing.T, s *loginfile.Spec) { s.Home = s.Root + "-sibling" }},
		{name: "HOME not clean", text: "must be a clean absolute path", edit: func(t *testing.T, s *loginfile.Spec) { s.Home = s.Root + "/a/../../escape" }},
		{name: "relative HOME", text: "must be a clean absolute path", edit: func(t *testing.T, s *loginfile.Spec) { s.Home = "home" }},
		{name: "path escapes", text: `path "../auth.json"`, edit: func(t *testing.T, s *loginfile.Spec) { s.Path = "../auth.json" }},
		{name: "absolute path", text: "must be a relative path", edit: func(t *testing.T, s *loginfile.Spec) { s.Path = "/etc/auth.json" }},
		{name: "empty value", text: "the login file is empty", edit: func(t *testing.T, s *loginfile.Spec) { s.Value = nil }},
		{name: "oversized value", text: "the limit is", edit: func(t *testing.T, s *loginfile.Spec) { s.Value = bytes.Repeat([]byte("a"), 64<<10+1) }},
		{name: "value not in the secret set", want: loginfile.ErrUnregistered, edit: func(t *testing.T, s *loginfile.Spec) { s.Secrets = redact.NewSet(authJSON) }},
		{name: "no secret set", want: loginfile.ErrUnregistered, edit: func(t *testing.T, s *loginfile.Spec) { s.Secrets = nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := spec(t)
			tc.edit(t, &s)
			before := snapshot(t, s.Root)
			_, err := loginfile.Seed(s)
			if err == nil {
				t.Fatal("Seed succeeded")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			if tc.text != "" && !strings.Contains(err.Error(), tc.text) {
				t.Errorf("err = %v, want it to say %q", err, tc.text)
			}
			for _, v := range loginfile.SecretValues([]byte(authJSON)) {
				if strings.Contains(err.Error(), v) {
					t.Errorf("the error carries the login file's value: %v", err)
				}
			}
			if after := snapshot(t, s.Root); after != before {
				t.Errorf("the tree changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// TestDestroyDoesNotFollowLinks: an agent that replaced its login file with a link to a
// file outside, and left files it cannot normally delete, still has its HOME destroyed
// and confirmed; the outside file is untouched.
func TestDestroyDoesNotFollowLinks(t *testing.T) {
	t.Parallel()
	s := spec(t)
	seeded, err := loginfile.Seed(s)
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(seeded.File); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, seeded.File); err != nil {
		t.Fatal(err)
	}
	locked := filepath.Join(s.Home, "cache", "locked")
	mkdirs(t, locked)
	if err := os.WriteFile(filepath.Join(locked, "f"), []byte("x"), 0o400); err != nil {
		t.Fatal(err)
	}
	td, err := seeded.Destroy()
	if err != nil || !td.Confirmed || td.Overwritten {
		t.Fatalf("Destroy = %+v, %v", td, err)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep me" {
		t.Fatalf("the outside file changed: %q, %v", b, err)
	}
}

// TestLoginValueNeverInEvidence: a hostile CLI prints its login file and its token; the
// evidence guard with the attempt's secret set (which Seed requires to hold every
// SecretValues text) stores neither, in any form, and the seeded description holds no
// part of the value.
func TestLoginValueNeverInEvidence(t *testing.T) {
	t.Parallel()
	s := spec(t)
	seeded, err := loginfile.Seed(s)
	if err != nil {
		t.Fatal(err)
	}
	defer seeded.Destroy()
	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{"HOME=" + s.Home, fakeCLIEnv + "=leak", "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "grok-sub-access-4f9c2a7e1b3d8c6f") {
		t.Fatalf("the hostile fake CLI did not print its token: %v\n%s", err, out)
	}
	desc, _ := json.Marshal(seeded)
	dir := t.TempDir()
	g := result.Guard{Secrets: s.Secrets}
	for name, body := range map[string][]byte{"stdout.log": out, "login-fixture.json": desc} {
		gf, err := g.Write(filepath.Join(dir, name), body, name == "login-fixture.json")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if name == "stdout.log" && len(gf.Leaks) == 0 {
			t.Errorf("the guard found no leak in the hostile CLI's output")
		}
	}
	leaks, err := s.Secrets.ScanTree(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(leaks) > 0 {
		t.Fatalf("evidence holds the login file: %v", leaks)
	}
	stored, _ := os.ReadFile(filepath.Join(dir, "stdout.log"))
	for _, v := range loginfile.SecretValues([]byte(authJSON)) {
		if bytes.Contains(stored, []byte(v)) || bytes.Contains(desc, []byte(v)) {
			t.Errorf("evidence holds %d bytes of the login file", len(v))
		}
	}
	if !bytes.Contains(stored, []byte("[REDACTED]")) {
		t.Errorf("the stored output was not redacted:\n%s", stored)
	}
}

// TestSecretValues: the whole file and every long JSON string in it.
func TestSecretValues(t *testing.T) {
	t.Parallel()
	got := loginfile.SecretValues([]byte(authJSON))
	want := []string{authJSON, "grok-sub-access-4f9c2a7e1b3d8c6f", "grok-sub-refresh-9e8d7c6b5a4f3e2d", "subscription"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("SecretValues = %q, want %q", got, want)
	}
	if got := loginfile.SecretValues([]byte("not json token")); len(got) != 1 {
		t.Errorf("a non-JSON login file: %q", got)
	}
	for _, bad := range []string{"", ".", "..", "a/b"} {
		if _, err := loginfile.CompanyHome("/x", bad); err == nil {
			t.Errorf("CompanyHome accepted company id %q", bad)
		}
	}
}

func mkdirs(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

// snapshot lists every path below root with its type.
func snapshot(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			fmt.Fprintf(&b, "%s:%v ", strings.TrimPrefix(p, root), fi.Mode().Type())
		}
		return nil
	})
	return b.String()
}
