package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

// FuzzLoad feeds arbitrary bytes to the loader as one catalog file next to a valid one.
// Load must never panic, must return either a catalog or a *ValidationError, and a
// returned catalog must be internally consistent.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(baseB))
	f.Add([]byte("cases: [\n"))
	f.Add([]byte("profiles:\n  - &a {id: x}\n  - *a\n"))
	f.Add([]byte("suites: [{id: s, definitionMetadata: {\"10\": 1, a: [1e21, -0.0]}}]\n"))
	f.Add([]byte("---\ngroups: []\n---\n{}\n"))
	if data, err := os.ReadFile(filepath.Join("testdata", "fingerprint", "catalog.yaml")); err == nil {
		f.Add(data)
	}
	for _, name := range []string{"cases.yaml", "suites.yaml", "profiles.yaml"} {
		if data, err := os.ReadFile(filepath.Join("default", name)); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := fstest.MapFS{
			"a.yaml": &fstest.MapFile{Data: []byte(baseA)},
			"b.yaml": &fstest.MapFile{Data: data},
		}
		c, err := Load(fsys)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) == 0 {
				t.Fatalf("Load error %v (%T) is not a non-empty *ValidationError", err, err)
			}
			return
		}
		seen := map[string]bool{}
		for _, cell := range c.Cells {
			if seen[cell.ID] || c.Cell(cell.ID) != cell {
				t.Fatalf("cell %s duplicated or not indexed", cell.ID)
			}
			seen[cell.ID] = true
			if len(cell.Suite.Fingerprint) != 64 {
				t.Fatalf("suite %s fingerprint %q", cell.Suite.ID, cell.Suite.Fingerprint)
			}
			if _, err := cell.Render("fuzz"); err != nil {
				t.Fatalf("a valid catalog's cell %s does not render: %v", cell.ID, err)
			}
		}
	})
}
