package source

import (
	"archive/tar"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// FuzzExtract feeds arbitrary bytes to the archive extraction: it must never panic,
// never write outside its destination, and leave only directories, regular files and
// symbolic links.
func FuzzExtract(f *testing.F) {
	f.Add(tarOf(f, reg("a", 1)))
	f.Add(tarOf(f, &tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: ".."}, reg("l/x", 1)))
	f.Add(tarOf(f, reg("../x", 1)))
	f.Add([]byte("not a tar"))
	f.Fuzz(func(t *testing.T, data []byte) {
		outer := t.TempDir()
		dst := filepath.Join(outer, "ws")
		if err := os.Mkdir(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		_, _ = Materialize(context.Background(), Source{Kind: KindTar, FS: fstest.MapFS{"w.tar": {Data: data}}, Name: "w.tar"}, dst, Options{Limits: Limits{MaxFiles: 64, MaxBytes: 1 << 20}})
		entries, err := os.ReadDir(outer)
		if err != nil || len(entries) != 1 {
			t.Fatalf("the extraction wrote beside its destination: %v %v", entries, err)
		}
		_ = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if m := d.Type(); !d.IsDir() && !m.IsRegular() && m&fs.ModeSymlink == 0 {
				t.Errorf("%s has type %v", strings.TrimPrefix(p, dst), m)
			}
			return nil
		})
	})
}
