package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func hexSum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// TestTake: small files are loaded and hashed; a link is listed with its target and not
// followed; a FIFO is listed by type and never opened (opening it would block); the
// manifest is in lexical order.
func TestTake(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	write(t, ws, "a.txt", "hello\n")
	write(t, ws, "sub/b.txt", "")
	if err := os.Symlink("/etc/passwd", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(ws, "dirlink")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Take(context.Background(), ws, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Path: "a.txt", Type: TypeFile, Bytes: 6, SHA256: "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03", Loaded: true},
		{Path: "dirlink", Type: TypeSymlink, Bytes: 3, Target: "sub"},
		{Path: "link", Type: TypeSymlink, Bytes: 11, Target: "/etc/passwd"},
		{Path: "pipe", Type: TypeOther, Mode: "p---------"},
		{Path: "sub/b.txt", Type: TypeFile, Bytes: 0, SHA256: hexSum(nil), Loaded: true},
	}
	if len(s.Manifest) != len(want) {
		t.Fatalf("manifest = %+v, want %+v", s.Manifest, want)
	}
	for i := range want {
		if s.Manifest[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, s.Manifest[i], want[i])
		}
	}
	if len(s.Files) != 2 || string(s.Files["a.txt"]) != "hello\n" || s.Files["sub/b.txt"] == nil {
		t.Errorf("files = %q, want a.txt and sub/b.txt only (no link followed)", s.Files)
	}
}

// TestTakeBigSparseFileStreams: a file over the cap is hashed (correctly) and listed,
// not loaded, and the snapshot allocates far less than the file's size.
func TestTakeBigSparseFileStreams(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	const size = 64 << 20
	f, err := os.Create(filepath.Join(ws, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("tail"), size-4); err != nil {
		t.Fatal(err)
	}
	f.Close()
	want := make([]byte, size)
	copy(want[size-4:], "tail")
	wantSum := hexSum(want)
	want = nil

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s, err := Take(context.Background(), ws, Limits{MaxFileBytes: 1 << 20})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	e := s.Manifest[0]
	if e.Loaded || s.Files["big.bin"] != nil || e.Bytes != size || e.SHA256 != wantSum || !strings.Contains(e.Note, "file cap") {
		t.Errorf("entry %+v; want hashed, listed and not loaded", e)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("the snapshot allocated %d bytes for a %d-byte file: it is not streaming", alloc, size)
	}
}

// TestTakeBudgets: the load budget stops loading (later files are hashed and listed),
// the hash budget stops hashing (files listed by size), the entry limit truncates.
func TestTakeBudgets(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	for _, n := range []string{"1", "2", "3", "4"} {
		write(t, ws, n+".txt", strings.Repeat(n, 100))
	}
	s, err := Take(context.Background(), ws, Limits{MaxTotalBytes: 250, MaxHashBytes: 300})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Files) != 2 || s.LoadedBytes != 200 || s.HashedBytes != 300 {
		t.Errorf("loaded %d files (%d bytes), hashed %d bytes; want 2, 200, 300", len(s.Files), s.LoadedBytes, s.HashedBytes)
	}
	if e := s.Manifest[2]; e.Loaded || e.SHA256 == "" || !strings.Contains(e.Note, "load budget") {
		t.Errorf("third entry %+v: want hashed, not loaded", e)
	}
	if e := s.Manifest[3]; e.Loaded || e.SHA256 != "" || e.Bytes != 100 || !strings.Contains(e.Note, "hash budget") {
		t.Errorf("fourth entry %+v: want listed by size only", e)
	}
	s, err = Take(context.Background(), ws, Limits{MaxEntries: 3})
	if err != nil || !s.Truncated || len(s.Manifest) != 3 {
		t.Errorf("entry limit: %v truncated %v entries %d", err, s != nil && s.Truncated, len(s.Manifest))
	}
}

// TestTakeErrors: a missing workspace and a cancelled context are errors.
func TestTakeErrors(t *testing.T) {
	t.Parallel()
	if _, err := Take(context.Background(), filepath.Join(t.TempDir(), "missing"), Limits{}); err == nil {
		t.Error("a missing workspace was snapshotted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ws := t.TempDir()
	write(t, ws, "a", "x")
	if _, err := Take(ctx, ws, Limits{}); err == nil {
		t.Error("a cancelled snapshot succeeded")
	}
}
