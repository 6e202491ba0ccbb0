package atomicfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// modes are the two kinds of write: durable, and without fsync.
var modes = []struct {
	name string
	opts []Option
}{{"durable", nil}, {"nosync", []Option{NoSync()}}}

// leftovers returns the names of temporary files left in dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if IsTemp(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		existing []byte // nil: no file before
		data     []byte
		perm     os.FileMode
	}{
		{name: "new file", data: []byte(`{"a":1}`), perm: 0o644},
		{name: "replaces a longer file", existing: []byte(strings.Repeat("old ", 1000)), data: []byte("new"), perm: 0o600},
		{name: "empty content", existing: []byte("x"), data: []byte{}, perm: 0o640},
		{name: "mode beyond the umask", data: []byte("x"), perm: 0o666},
	}
	for _, m := range modes {
		for _, tt := range tests {
			t.Run(m.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				path := filepath.Join(dir, "result.json")
				if tt.existing != nil {
					if err := os.WriteFile(path, tt.existing, 0o600); err != nil {
						t.Fatal(err)
					}
				}
				if err := WriteFile(path, tt.data, tt.perm, m.opts...); err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, tt.data) {
					t.Errorf("content = %q, want %q", got, tt.data)
				}
				if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != tt.perm {
					t.Errorf("mode = %v (%v), want %v", fi.Mode().Perm(), err, tt.perm)
				}
				if l := leftovers(t, dir); len(l) > 0 {
					t.Errorf("temporary files left: %v", l)
				}
			})
		}
	}
}

func TestWriteFileFailures(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name+"/missing directory", func(t *testing.T) {
			t.Parallel()
			err := WriteFile(filepath.Join(t.TempDir(), "absent", "result.json"), []byte("x"), 0o644, m.opts...)
			if err == nil || !strings.Contains(err.Error(), "creating a temporary file") {
				t.Fatalf("err = %v, want a temporary-file error", err)
			}
		})
		t.Run(m.name+"/MakeDirs", func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "a", "b", "f.txt")
			for _, content := range []string{"one", "two"} {
				if err := WriteFile(path, []byte(content), 0o644, append(m.opts, MakeDirs())...); err != nil {
					t.Fatal(err)
				}
				if b, _ := os.ReadFile(path); string(b) != content {
					t.Errorf("got %q, want %q", b, content)
				}
			}
			if fi, err := os.Stat(filepath.Join(dir, "a")); err != nil || !fi.IsDir() || fi.Mode().Perm()&0o700 != 0o700 {
				t.Errorf("made directory: %v, %v", fi, err)
			}
			if err := WriteFile(filepath.Join(path, "under-a-file"), nil, 0o644, MakeDirs()); err == nil {
				t.Error("writing under a regular file must fail")
			}
		})
		t.Run(m.name+"/target is a non-empty directory", func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			target := filepath.Join(dir, "result.json")
			if err := os.MkdirAll(filepath.Join(target, "inside"), 0o755); err != nil {
				t.Fatal(err)
			}
			err := WriteFile(target, []byte("x"), 0o644, m.opts...)
			if err == nil || !strings.Contains(err.Error(), "renaming") {
				t.Fatalf("err = %v, want a rename error", err)
			}
			if l := leftovers(t, dir); len(l) > 0 {
				t.Errorf("temporary files left after a failed rename: %v", l)
			}
			if fi, err := os.Stat(target); err != nil || !fi.IsDir() {
				t.Errorf("target changed: %v, %v", fi, err)
			}
		})
	}
}

// TestExclusive: an Exclusive write creates the destination and never replaces one;
// the refused write leaves the existing file and no temporary file.
func TestExclusive(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "db.sqlite")
			if err := WriteFile(path, []byte("first"), 0o600, append(m.opts, Exclusive())...); err != nil {
				t.Fatal(err)
			}
			err := WriteFile(path, []byte("second"), 0o600, append(m.opts, Exclusive())...)
			if err == nil || !os.IsExist(errorsUnwrapAll(err)) {
				t.Fatalf("second exclusive write: %v, want an exists error", err)
			}
			if b, _ := os.ReadFile(path); string(b) != "first" {
				t.Errorf("content = %q, want first", b)
			}
			if l := leftovers(t, dir); len(l) > 0 {
				t.Errorf("temporary files left: %v", l)
			}
		})
	}
}

// errorsUnwrapAll returns the innermost error of a chain of single wraps.
func errorsUnwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return err
		}
		err = u.Unwrap()
	}
}

// TestPendingPublishAndDiscard: Publish puts the file in place and hands back the open
// file (the same inode as the destination); Discard leaves nothing; an ended write
// refuses to end again.
func TestPendingPublishAndDiscard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, ".owner")
	p, err := Create(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Write([]byte(`{"pid":1}`)); err != nil {
		t.Fatal(err)
	}
	f, err := p.Publish()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var open, placed syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &open); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(path, &placed); err != nil || open.Ino != placed.Ino {
		t.Errorf("published file: inode %d, destination %d (%v)", open.Ino, placed.Ino, err)
	}
	if err := p.Commit(); err == nil {
		t.Error("a published write committed again")
	}
	d, err := Create(filepath.Join(dir, "gone.txt"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = d.Write([]byte("x"))
	d.Discard()
	d.Discard()
	if _, err := os.Stat(filepath.Join(dir, "gone.txt")); !os.IsNotExist(err) {
		t.Errorf("a discarded write left its destination: %v", err)
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("temporary files left: %v", l)
	}
}

// TestCommitStaged: staged files in two directories appear only after the commit,
// whole and with their modes; a failing commit removes the files not yet renamed, and
// DiscardStaged leaves nothing.
func TestCommitStaged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stage := func(path, content string) Staged {
		t.Helper()
		p, err := Create(path, 0o644, MakeDirs())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
		st, err := p.Stage()
		if err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(st.Temp()); err != nil || string(b) != content {
			t.Fatalf("staged temp %s: %q, %v", st.Temp(), b, err)
		}
		return st
	}
	files := []Staged{stage(filepath.Join(dir, "a", "summary.md"), "# s\n"), stage(filepath.Join(dir, "b", "report.xml"), "<x/>\n")}
	if _, err := os.Stat(files[0].Path); !os.IsNotExist(err) {
		t.Fatalf("a staged file is in place before the commit: %v", err)
	}
	if err := CommitStaged(files); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if fi, err := os.Stat(f.Path); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: %v, %v", f.Path, fi, err)
		}
	}
	blocked := filepath.Join(dir, "c", "blocked")
	if err := os.MkdirAll(filepath.Join(blocked, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := []Staged{stage(blocked, "x"), stage(filepath.Join(dir, "c", "after.txt"), "y")}
	if err := CommitStaged(bad); err == nil {
		t.Fatal("committing over a non-empty directory must fail")
	}
	DiscardStaged([]Staged{stage(filepath.Join(dir, "c", "dropped.txt"), "z")})
	for _, sub := range []string{"a", "b", "c"} {
		if l := leftovers(t, filepath.Join(dir, sub)); len(l) > 0 {
			t.Errorf("%s: temporary files left: %v", sub, l)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "c", "after.txt")); !os.IsNotExist(err) {
		t.Errorf("a file after the failure was put in place: %v", err)
	}
}

// TestSyncFilesystem: a directory's file system syncs; a missing directory is an
// error.
func TestSyncFilesystem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := SyncFilesystem(dir); err != nil {
		t.Error(err)
	}
	if err := SyncFilesystem(filepath.Join(dir, "absent")); err == nil {
		t.Error("SyncFilesystem of a missing directory must fail")
	}
}

func TestIsTemp(t *testing.T) {
	t.Parallel()
	p, err := Create(filepath.Join(t.TempDir(), "result.json"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Discard()
	for name, want := range map[string]bool{filepath.Base(p.File().Name()): true, "result.json": false, ".hidden": false, "a.tmp-1": false} {
		if IsTemp(name) != want {
			t.Errorf("IsTemp(%q) = %v, want %v", name, !want, want)
		}
	}
}

// TestReadersSeeWholeFiles runs writers of distinct complete versions against readers:
// every read returns one whole version, never a mix or a prefix.
func TestReadersSeeWholeFiles(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			readersSeeWholeFiles(t, m.opts)
		})
	}
}

// readersSeeWholeFiles is TestReadersSeeWholeFiles for one kind of write.
func readersSeeWholeFiles(t *testing.T, opts []Option) {
	path := filepath.Join(t.TempDir(), "campaign.json")
	versions := make(map[string]bool)
	var contents [][]byte
	for i := range 8 {
		b := bytes.Repeat([]byte(fmt.Sprintf("version-%d;", i)), 4096)
		contents = append(contents, b)
		versions[string(b)] = true
	}
	if err := WriteFile(path, contents[0], 0o644, opts...); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 4 {
		wg.Go(func() {
			for i := range 20 {
				if err := WriteFile(path, contents[(w+i)%len(contents)], 0o644, opts...); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range 200 {
				b, err := os.ReadFile(path)
				if err != nil {
					errs <- err
					return
				}
				if !versions[string(b)] {
					errs <- fmt.Errorf("read a partial or mixed file of %d bytes", len(b))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
