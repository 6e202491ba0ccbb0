package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestHashExecutableContext: the digest is the file's SHA-256 whatever its size against
// the chunk size, and a done context ends the hashing with its error.
func TestHashExecutableContext(t *testing.T) {
	t.Parallel()
	for _, size := range []int{0, 1, hashChunk - 1, hashChunk, hashChunk + 1, 3 * hashChunk} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i * 7)
		}
		p := filepath.Join(t.TempDir(), "bin")
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
		d, err := HashExecutable(p)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if d.SHA256 != hex.EncodeToString(sum[:]) || d.Size != int64(size) {
			t.Errorf("size %d: digest %s (size %d), want %x", size, d.SHA256, d.Size, sum)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := HashExecutableContext(ctx, p); !errors.Is(err, context.Canceled) {
			t.Errorf("size %d: a cancelled hash: %v, want context.Canceled", size, err)
		}
	}
}
