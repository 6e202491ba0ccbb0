package worker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/agentproof/agentproof"

// moduleSources returns the non-test Go files (as "<dir>/<file>") of the packages of
// this module that package dir imports, transitively, dir included.
func moduleSources(t *testing.T, root, dir string) []string {
	t.Helper()
	seen := map[string]bool{}
	var files []string
	var visit func(dir string)
	visit = func(dir string) {
		if seen[dir] {
			return
		}
		seen[dir] = true
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			files = append(files, dir+"/"+name)
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, dir, name), nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if rel, ok := strings.CutPrefix(path, modulePath+"/"); ok {
					visit(rel)
				}
			}
		}
	}
	visit(dir)
	slices.Sort(files)
	return files
}

// TestManifestClosure: the manifest lists the executable and exactly the non-test
// sources of the worker and of every module package it imports, transitively, sorted,
// each hashed as it is on disk.
func TestManifestClosure(t *testing.T) {
	t.Parallel()
	m, err := ExecutionManifestFor(selfPath(t))
	if err != nil {
		t.Fatal(err)
	}
	if m.Protocol != GuardedFixtureProtocol || m.Collector != GuardedFixtureCollector {
		t.Errorf("tags %q %q", m.Protocol, m.Collector)
	}
	var paths []string
	for _, f := range m.Files {
		paths = append(paths, f.Path)
	}
	if !slices.IsSorted(paths) || len(slices.Compact(slices.Clone(paths))) != len(paths) {
		t.Errorf("manifest paths not sorted and unique: %v", paths)
	}
	want := append(moduleSources(t, "..", "worker"), ManifestExecutablePath)
	slices.Sort(want)
	if !slices.Equal(paths, want) {
		t.Errorf("manifest files\n%v\nwant the transitive closure\n%v", paths, want)
	}
	for _, f := range m.Files {
		if f.Path == ManifestExecutablePath {
			continue
		}
		data, err := os.ReadFile(filepath.Join("..", f.Path))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if got := "sha256:" + hex.EncodeToString(sum[:]); got != f.SHA256 {
			t.Errorf("%s: manifest %s, on disk %s (rebuild)", f.Path, f.SHA256, got)
		}
	}
	if m.Digest != manifestDigest(m.Protocol, m.Collector, m.Files) {
		t.Errorf("digest does not recompute")
	}
}

// TestManifestDigestCoversEveryFile: a change to any one listed file, the executable
// included, changes the digest.
func TestManifestDigestCoversEveryFile(t *testing.T) {
	t.Parallel()
	program := copyProgram(t, filepath.Join(t.TempDir(), "agentproof"))
	before, err := ExecutionManifestFor(program)
	if err != nil {
		t.Fatal(err)
	}
	for i := range before.Files {
		files := slices.Clone(before.Files)
		b := []byte(files[i].SHA256)
		b[len(b)-1] ^= 1
		files[i].SHA256 = string(b)
		if manifestDigest(before.Protocol, before.Collector, files) == before.Digest {
			t.Errorf("changing %s leaves the digest unchanged", files[i].Path)
		}
	}
	f, err := os.OpenFile(program, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	after, err := ExecutionManifestFor(program)
	if err != nil {
		t.Fatal(err)
	}
	if after.Digest == before.Digest {
		t.Fatal("a changed executable byte leaves the digest unchanged")
	}
	for i := range after.Files {
		changed := after.Files[i] != before.Files[i]
		if changed != (after.Files[i].Path == ManifestExecutablePath) {
			t.Errorf("entry %s changed=%v", after.Files[i].Path, changed)
		}
	}
}

func TestParseExecutionManifest(t *testing.T) {
	t.Parallel()
	m, err := ExecutionManifestFor(selfPath(t))
	if err != nil {
		t.Fatal(err)
	}
	good, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseExecutionManifest(good)
	if err != nil || got.Digest != m.Digest || !slices.Equal(got.Files, m.Files) {
		t.Fatalf("round trip: %v", err)
	}
	edit := func(f func(v map[string]any)) []byte {
		var v map[string]any
		if err := json.Unmarshal(good, &v); err != nil {
			t.Fatal(err)
		}
		f(v)
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	files := func(v map[string]any) []any { return v["files"].([]any) }
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"unknown field", edit(func(v map[string]any) { v["extra"] = 1 }), "unknown field"},
		{"missing digest", edit(func(v map[string]any) { delete(v, "digest") }), "digest must be"},
		{"wrong protocol", edit(func(v map[string]any) { v["protocol"] = "sf-guarded-fixture/2" }), "protocol must be"},
		{"wrong collector", edit(func(v map[string]any) { v["collector"] = "x" }), "collector must be"},
		{"no files", edit(func(v map[string]any) { v["files"] = []any{} }), "at least one file"},
		{"unsorted", edit(func(v map[string]any) { fs := files(v); fs[0], fs[1] = fs[1], fs[0] }), "is not after"},
		{"duplicate", edit(func(v map[string]any) { fs := files(v); fs[1] = fs[0] }), "is not after"},
		{"bad hash", edit(func(v map[string]any) { files(v)[0].(map[string]any)["sha256"] = "sha256:ABC" }), "files[0].sha256"},
		{"bad path", edit(func(v map[string]any) { files(v)[0].(map[string]any)["path"] = "../x" }), "files[0].path"},
		{"changed file", edit(func(v map[string]any) {
			files(v)[0].(map[string]any)["sha256"] = "sha256:" + strings.Repeat("0", 64)
		}), "does not match the files"},
		{"trailing data", append(slices.Clone(good), []byte(" {}")...), "trailing data"},
		{"not JSON", []byte("nope"), "not a manifest object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseExecutionManifest(tt.data)
			var merr *ManifestError
			if !errors.As(err, &merr) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want a *ManifestError containing %q", err, tt.want)
			}
		})
	}
}

func FuzzParseExecutionManifest(f *testing.F) {
	files := []ManifestFile{{Path: "bin/agentproof", SHA256: "sha256:" + strings.Repeat("a", 64)}, {Path: "worker/x.go", SHA256: "sha256:" + strings.Repeat("b", 64)}}
	m := ExecutionManifest{Protocol: GuardedFixtureProtocol, Collector: GuardedFixtureCollector, Files: files, Digest: manifestDigest(GuardedFixtureProtocol, GuardedFixtureCollector, files)}
	good, _ := json.Marshal(m)
	f.Add(good)
	f.Add([]byte(`{"protocol":"sf-guarded-fixture/1"}`))
	f.Add([]byte(`{"files":[{"path":"a/b","sha256":"sha256:"}]} x`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseExecutionManifest(data)
		if err != nil {
			return
		}
		if m.Digest != manifestDigest(m.Protocol, m.Collector, m.Files) {
			t.Fatalf("accepted a manifest whose digest does not recompute")
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := ParseExecutionManifest(again)
		if err != nil || m2.Digest != m.Digest || !slices.Equal(m2.Files, m.Files) {
			t.Fatalf("re-encoded manifest does not parse back: %v", err)
		}
	})
}
