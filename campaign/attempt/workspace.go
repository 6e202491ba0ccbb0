package attempt

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
)

// maxObservedFile bounds a workspace file read into the observation, in bytes; larger
// files appear in the manifest only.
const maxObservedFile = 4 << 20

// manifestEntry is one workspace file in workspace-manifest.json.
type manifestEntry struct {
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// snapshotWorkspace reads every regular file of ws (relative slash paths) up to
// maxObservedFile bytes each, and lists every file with its size and SHA-256.
func snapshotWorkspace(ws string) (map[string][]byte, []manifestEntry, error) {
	files := map[string][]byte{}
	manifest := []manifestEntry{}
	err := filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(ws, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		manifest = append(manifest, manifestEntry{Path: rel, Bytes: int64(len(b)), SHA256: hex.EncodeToString(sum[:])})
		if len(b) <= maxObservedFile {
			files[rel] = b
		}
		return nil
	})
	return files, manifest, err
}
