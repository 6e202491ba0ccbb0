package container

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestNodeRootfs: the Node.js image's root file system holds the host's node, the
// program interpreter and every library node needs (libc among them), busybox's
// shell, and is byte-for-byte the same when written twice (its digest names the
// image). It reads the host's node (about 100 MB), so -short skips it.
func TestNodeRootfs(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the host's Node.js binary (-short skips it)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if msg := staticProblem(BusyboxBinary); msg != "" {
		t.Skip(msg)
	}
	files, err := nodeImageFiles(node)
	if err != nil {
		t.Fatal(err)
	}
	var first bytes.Buffer
	if err := writeNodeRootfs(&first, files); err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if err := writeNodeRootfs(h, files); err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(first.Bytes()); !bytes.Equal(sum[:], h.Sum(nil)) {
		t.Error("the root file system's archive differs when written twice")
	}
	var names []string
	tr := tar.NewReader(&first)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		if hdr.Uid != 0 || hdr.ModTime.Unix() != 0 {
			t.Errorf("%s: owner %d, time %v; want root and the epoch", hdr.Name, hdr.Uid, hdr.ModTime)
		}
	}
	want := []string{"bin/sh", "bin/busybox", strings.TrimPrefix(strings.Replace(node, "/usr/bin/", "/bin/", 1), "/")}
	for _, f := range files {
		want = append(want, strings.TrimPrefix(f.At, "/"))
	}
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("the archive has no %s (it has %v)", w, names)
		}
	}
	if !slices.ContainsFunc(files, func(f imageFile) bool { return strings.Contains(f.At, "/libc.so") }) ||
		!slices.ContainsFunc(files, func(f imageFile) bool { return strings.Contains(f.At, "ld-linux") }) {
		t.Errorf("files %v: want libc and the program interpreter", files)
	}
}

// TestLibraryClosureStatic: a static program needs no library.
func TestLibraryClosureStatic(t *testing.T) {
	if msg := staticProblem(BusyboxBinary); msg != "" {
		t.Skip(msg)
	}
	libs, err := libraryClosure(BusyboxBinary)
	if err != nil || len(libs) != 0 {
		t.Errorf("libraryClosure(%s) = %v, %v; want none", BusyboxBinary, libs, err)
	}
	if _, err := libraryClosure("/etc/passwd"); err == nil || !strings.Contains(err.Error(), "/etc/passwd") {
		t.Errorf("a file that is not ELF: %v, want an error naming it", err)
	}
}
