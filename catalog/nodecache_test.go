package catalog

import (
	"bytes"
	"crypto/sha256"
	"io/fs"
	"path/filepath"
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"
	"gotest.tools/v3/golden"
)

// parseDocs is what parseFile gets from the YAML parser for data.
func parseDocs(t testing.TB, data []byte) []*yaml.Node {
	t.Helper()
	var docs []*yaml.Node
	if err := eachDoc(data, func(root *yaml.Node) bool { docs = append(docs, root); return true }); err != nil {
		t.Fatal(err)
	}
	return docs
}

// TestDefaultNodeCache: the embedded node cache is the YAML parser's trees of the
// default catalog's files as they are now (regenerate with -update), every file is
// read from it node for node as the parser reads it, and bytes the cache does not
// hold (an edited file) are not read from it.
func TestDefaultNodeCache(t *testing.T) {
	t.Parallel()
	fsys := DefaultFS()
	names, err := fs.Glob(fsys, "*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatalf("default catalog files: %v %v", names, err)
	}
	files := map[[32]byte][]*yaml.Node{}
	var order [][32]byte
	contents := map[string][]byte{}
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		contents[name] = data
		sum := sha256.Sum256(data)
		files[sum] = parseDocs(t, data)
		order = append(order, sum)
	}
	blob, err := encodeNodes(files, order)
	if err != nil {
		t.Fatal(err)
	}
	if golden.FlagUpdate() {
		abs, err := filepath.Abs("defaultnodes.bin")
		if err != nil {
			t.Fatal(err)
		}
		golden.AssertBytes(t, blob, abs)
		return
	}
	if string(blob) != defaultNodes {
		t.Fatal("catalog/defaultnodes.bin is not the default catalog's parsed files (a default/*.yaml changed): run go test ./catalog -run TestDefaultNodeCache -update")
	}
	for _, name := range names {
		data := contents[name]
		got, ok := cachedDocs(data)
		if !ok {
			t.Errorf("%s: not in the node cache", name)
			continue
		}
		if want := parseDocs(t, data); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the cached nodes differ from the parser's", name)
		}
		if _, ok := cachedDocs(append(bytes.Clone(data), "\n# edited\n"...)); ok {
			t.Errorf("%s: edited bytes read from the node cache", name)
		}
	}
}

// TestNodeCacheAliases: an alias is decoded pointing at its anchored node.
func TestNodeCacheAliases(t *testing.T) {
	t.Parallel()
	data := []byte("a: &x {b: 1}\nc: *x\nd: [&y 2, *y, *x]\n")
	sum := sha256.Sum256(data)
	blob, err := encodeNodes(map[[32]byte][]*yaml.Node{sum: parseDocs(t, data)}, [][32]byte{sum})
	if err != nil {
		t.Fatal(err)
	}
	idx, err := indexNodes(string(blob))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := decodeNodes(string(blob)[idx[sum]:])
	if err != nil {
		t.Fatal(err)
	}
	if want := parseDocs(t, data); !reflect.DeepEqual(docs, want) {
		t.Fatal("decoded nodes differ from the parser's")
	}
	m := docs[0].Content[0]
	if m.Content[3].Alias != m.Content[1] || m.Content[5].Content[2].Alias != m.Content[1] || m.Content[5].Content[1].Alias != m.Content[5].Content[0] {
		t.Error("an alias does not point at its anchored node")
	}
}

// FuzzDecodeNodes: a node cache that does not decode is an error, never a panic or an
// unbounded allocation.
func FuzzDecodeNodes(f *testing.F) {
	data := []byte("cases:\n  - id: a # note\n    tags: &t [x, y]\n    more: *t\n---\nsuites: []\n")
	sum := sha256.Sum256(data)
	blob, err := encodeNodes(map[[32]byte][]*yaml.Node{sum: parseDocs(f, data)}, [][32]byte{sum})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(blob)
	f.Add([]byte(nodeCacheMagic + "\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		idx, err := indexNodes(string(b))
		if err != nil {
			return
		}
		for _, at := range idx {
			_, _ = decodeNodes(string(b[at:]))
		}
	})
}
