package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func tarOf(t testing.TB, entries ...*tar.Header) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, h := range entries {
		body := ""
		if h.Typeflag == tar.TypeReg {
			body = strings.Repeat("x", int(h.Size))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func reg(name string, size int64) *tar.Header {
	return &tar.Header{Name: name, Typeflag: tar.TypeReg, Size: size, Mode: 0o644}
}

func TestExtractRefusesUnsafeEntries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		entries []*tar.Header
		want    string
	}{
		{"absolute", []*tar.Header{reg("/etc/evil", 1)}, "relative paths"},
		{"dotdot", []*tar.Header{reg("a/../../evil", 1)}, `".."`},
		{"hard link", []*tar.Header{reg("a", 1), {Name: "b", Typeflag: tar.TypeLink, Linkname: "a"}}, "only directories"},
		{"device", []*tar.Header{{Name: "dev", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}}, "only directories"},
		{"fifo", []*tar.Header{{Name: "p", Typeflag: tar.TypeFifo}}, "only directories"},
		{"escape through a link", []*tar.Header{{Name: "out", Typeflag: tar.TypeSymlink, Linkname: "/tmp"}, reg("out/evil", 1)}, "escapes"},
		{"escape through a relative link", []*tar.Header{{Name: "up", Typeflag: tar.TypeSymlink, Linkname: "../.."}, reg("up/evil", 1)}, "escapes"},
		{"duplicate", []*tar.Header{reg("a", 1), reg("a", 2)}, "file a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dst := t.TempDir()
			fsys := fstest.MapFS{"w.tar": {Data: tarOf(t, tc.entries...)}}
			_, err := Materialize(context.Background(), Source{Kind: KindTar, FS: fsys, Name: "w.tar", Ref: "w.tar"}, dst, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if _, err := os.Stat("/tmp/evil"); err == nil && tc.name == "escape through a link" {
				t.Fatal("the archive wrote outside the workspace")
			}
		})
	}
}

func TestExtractWritesFilesDirsAndLinks(t *testing.T) {
	t.Parallel()
	dst := t.TempDir()
	data := tarOf(t, &tar.Header{Name: "./src/", Typeflag: tar.TypeDir, Mode: 0o755}, reg("src/a.txt", 3),
		&tar.Header{Name: "run.sh", Typeflag: tar.TypeReg, Size: 2, Mode: 0o700},
		&tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "src/a.txt"})
	got, err := Materialize(context.Background(), Source{Kind: KindTar, FS: fstest.MapFS{"w.tar": {Data: data}}, Name: "w.tar"}, dst, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Files != 4 || got.Bytes != 5 {
		t.Errorf("seeded %+v, want 4 entries and 5 bytes", got)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "link")); err != nil || string(b) != "xxx" {
		t.Errorf("link reads %q, %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("run.sh mode %v, %v; want 0755", fi.Mode(), err)
	}
}

func TestMaterializeLimits(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{"w.tar": {Data: tarOf(t, reg("a", 10), reg("b", 10))}}
	_, err := Materialize(context.Background(), Source{Kind: KindTar, FS: fsys, Name: "w.tar"}, t.TempDir(), Options{Limits: Limits{MaxBytes: 15}})
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("error %v, want ErrLimit", err)
	}
}

func TestTreeDigestNamesTheContent(t *testing.T) {
	t.Parallel()
	base := fstest.MapFS{"go.mod": {Data: []byte("module x\n")}, "x/x.go": {Data: []byte("package x\n")}, "run.sh": {Data: []byte("#!/bin/sh\n"), Mode: 0o755}}
	d0, err := TreeDigest(base, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !ValidDigest(d0) {
		t.Fatalf("digest %q has not the shape", d0)
	}
	clone := func(edit func(fstest.MapFS)) string {
		m := fstest.MapFS{}
		for k, v := range base {
			f := *v
			m[k] = &f
		}
		edit(m)
		d, err := TreeDigest(m, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := clone(func(fstest.MapFS) {}); d != d0 {
		t.Errorf("the same tree has digest %s, then %s", d0, d)
	}
	for name, edit := range map[string]func(fstest.MapFS){
		"content": func(m fstest.MapFS) { m["go.mod"] = &fstest.MapFile{Data: []byte("module y\n")} },
		"mode":    func(m fstest.MapFS) { m["run.sh"].Mode = 0o644 },
		"rename":  func(m fstest.MapFS) { m["y/x.go"] = m["x/x.go"]; delete(m, "x/x.go") },
		"added":   func(m fstest.MapFS) { m["new"] = &fstest.MapFile{} },
	} {
		if d := clone(edit); d == d0 {
			t.Errorf("a change of %s keeps the digest", name)
		}
	}
	// Materialising the tree and hashing the copy gives the same digest.
	dst := t.TempDir()
	if _, err := Materialize(context.Background(), Source{Kind: KindDir, FS: base}, dst, Options{}); err != nil {
		t.Fatal(err)
	}
	if d, err := TreeDigest(os.DirFS(dst), Limits{}); err != nil || d != d0 {
		t.Errorf("the seeded copy has digest %s (%v), want %s", d, err, d0)
	}
}

func TestValidCommitRefusesNames(t *testing.T) {
	t.Parallel()
	for c, ok := range map[string]bool{
		strings.Repeat("a", 40): true, strings.Repeat("0", 64): true,
		"main": false, "v1.0": false, "abc1234": false, strings.Repeat("A", 40): false, "HEAD": false,
	} {
		if ValidCommit(c) != ok {
			t.Errorf("ValidCommit(%q) = %v, want %v", c, !ok, ok)
		}
	}
}

func TestIsURL(t *testing.T) {
	t.Parallel()
	for repo, want := range map[string]bool{"https://example.com/r.git": true, "git@example.com:r.git": true, "file:///srv/r": true,
		"/srv/r": false, "../r": false, "a/b@c:d": false} {
		if IsURL(repo) != want {
			t.Errorf("IsURL(%q) = %v, want %v", repo, !want, want)
		}
	}
}

// gitRepo makes a repository with two commits and returns its path and commits.
func gitRepo(t *testing.T) (string, string, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed: %v", err)
	}
	dir := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", ".")
	run("commit", "-q", "-m", "one")
	first := run("rev-parse", "HEAD")
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("commit", "-q", "-am", "two")
	return dir, first, run("rev-parse", "HEAD")
}

func TestGitSourceAtAPinnedCommit(t *testing.T) {
	t.Parallel()
	repo, first, second := gitRepo(t)
	cache := t.TempDir()
	ctx := context.Background()
	for _, tc := range []struct{ commit, want string }{{first, "one\n"}, {second, "two\n"}} {
		if err := Fetch(ctx, cache, repo, tc.commit); err != nil {
			t.Fatal(err)
		}
		dst := t.TempDir()
		s := Source{Kind: KindGit, Repo: repo, Commit: tc.commit, Ref: repo, Digest: "git:" + tc.commit}
		if _, err := Materialize(ctx, s, dst, Options{GitCache: cache}); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(dst, "a.txt")); string(b) != tc.want {
			t.Errorf("commit %s seeded a.txt %q, want %q", tc.commit[:8], b, tc.want)
		}
		if _, err := os.Stat(filepath.Join(dst, ".git")); err == nil {
			t.Error("the workspace holds .git")
		}
		if p := s.Record().Problems(); p != nil {
			t.Errorf("record problems: %v", p)
		}
	}
	if err := Fetch(ctx, cache, repo, "main"); err == nil || !strings.Contains(err.Error(), "not a full commit id") {
		t.Errorf("a branch name: %v", err)
	}
	missing := strings.Repeat("1", 40)
	if err := Fetch(ctx, cache, repo, missing); err == nil || !strings.Contains(err.Error(), "is not in the repository") {
		t.Errorf("a missing commit: %v", err)
	}
	if err := Fetch(ctx, cache, filepath.Join(repo, "nowhere"), first); err == nil || !strings.Contains(err.Error(), "cloning") {
		t.Errorf("a repository that is not there: %v", err)
	}
}

// The digest Materialize observes is the one the catalog records: a directory's tree
// digest, an archive's bytes (gzip-compressed or not, padding included).
func TestMaterializeObservesTheDigest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tree := fstest.MapFS{"a.txt": {Data: []byte("a\n")}, "d/b.sh": {Data: []byte("#!/bin/sh\n"), Mode: 0o755}}
	want, err := TreeDigest(tree, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Materialize(ctx, Source{Kind: KindDir, FS: tree, Name: "."}, t.TempDir(), Options{})
	if err != nil || got.Digest != want {
		t.Fatalf("dir: digest %q (%v), want %q", got.Digest, err, want)
	}
	plain := tarOf(t, reg("a", 3))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(plain)
	_ = zw.Close()
	for name, data := range map[string][]byte{"w.tar": plain, "w.tgz": gz.Bytes()} {
		fsys := fstest.MapFS{name: {Data: data}}
		want, err := FileDigest(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Materialize(ctx, Source{Kind: KindTar, FS: fsys, Name: name}, t.TempDir(), Options{})
		if err != nil || got.Digest != want {
			t.Errorf("%s: digest %q (%v), want %q", name, got.Digest, err, want)
		}
	}
}
