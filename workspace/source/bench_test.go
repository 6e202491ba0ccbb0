package source

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
)

// BenchmarkMaterializeDir seeds a workspace from a directory of 200 files of 4 KiB
// (the copy and the digest of what was written): the cost each attempt of a case with
// a directory source pays before its first turn.
func BenchmarkMaterializeDir(b *testing.B) {
	tree := fstest.MapFS{}
	for i := range 200 {
		tree[fmt.Sprintf("pkg%d/file%d.go", i%10, i)] = &fstest.MapFile{Data: []byte(strings.Repeat("x", 4096))}
	}
	want, err := TreeDigest(tree, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		got, err := Materialize(context.Background(), Source{Kind: KindDir, FS: tree, Name: "."}, b.TempDir(), Options{})
		if err != nil || got.Digest != want {
			b.Fatalf("digest %s (%v), want %s", got.Digest, err, want)
		}
	}
}
