package evidence

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// writers are the two atomic writers: durable, and without fsync (an ephemeral home's).
// Both must give readers and killed writers whole files only.
var writers = []struct {
	name  string
	write func(string, []byte, os.FileMode) error
}{{"durable", WriteFileAtomic}, {"replace", WriteFileReplace}}

// leftovers returns the names of temp files WriteFileAtomic left in dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestWriteFileAtomic(t *testing.T) {
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
	}
	for _, w := range writers {
		for _, tt := range tests {
			t.Run(w.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				path := filepath.Join(dir, "result.json")
				if tt.existing != nil {
					if err := os.WriteFile(path, tt.existing, 0o666); err != nil {
						t.Fatal(err)
					}
				}
				if err := w.write(path, tt.data, tt.perm); err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, tt.data) {
					t.Errorf("content = %q, want %q", got, tt.data)
				}
				fi, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != tt.perm {
					t.Errorf("mode = %v, want %v", fi.Mode().Perm(), tt.perm)
				}
				if l := leftovers(t, dir); len(l) > 0 {
					t.Errorf("temp files left: %v", l)
				}
			})
		}
	}
}

func TestWriteFileAtomicFailures(t *testing.T) {
	t.Parallel()
	for _, w := range writers {
		t.Run(w.name+"/missing directory", func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			err := w.write(filepath.Join(dir, "absent", "result.json"), []byte("x"), 0o644)
			if err == nil || !strings.Contains(err.Error(), "creating temp file") {
				t.Fatalf("err = %v, want a temp-file error", err)
			}
		})
		t.Run(w.name+"/target is a non-empty directory", func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			target := filepath.Join(dir, "result.json")
			if err := os.MkdirAll(filepath.Join(target, "inside"), 0o755); err != nil {
				t.Fatal(err)
			}
			err := w.write(target, []byte("x"), 0o644)
			if err == nil || !strings.Contains(err.Error(), "renaming") {
				t.Fatalf("err = %v, want a rename error", err)
			}
			if l := leftovers(t, dir); len(l) > 0 {
				t.Errorf("temp files left after a failed rename: %v", l)
			}
			if fi, err := os.Stat(target); err != nil || !fi.IsDir() {
				t.Errorf("target changed: %v, %v", fi, err)
			}
		})
	}
}

// TestWriteFileAtomicReadersSeeWholeFiles runs writers of distinct complete versions
// against readers: every read must return one whole version, never a mix or a prefix.
func TestWriteFileAtomicReadersSeeWholeFiles(t *testing.T) {
	t.Parallel()
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			readersSeeWholeFiles(t, w.write)
		})
	}
}

// readersSeeWholeFiles is TestWriteFileAtomicReadersSeeWholeFiles for one writer.
func readersSeeWholeFiles(t *testing.T, write func(string, []byte, os.FileMode) error) {
	dir := t.TempDir()
	path := filepath.Join(dir, "campaign.json")
	versions := make(map[string]bool)
	var contents [][]byte
	for i := range 8 {
		b := bytes.Repeat([]byte(fmt.Sprintf("version-%d;", i)), 4096)
		contents = append(contents, b)
		versions[string(b)] = true
	}
	if err := write(path, contents[0], 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				if err := write(path, contents[(w+i)%len(contents)], 0o644); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
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
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("temp files left: %v", l)
	}
}
