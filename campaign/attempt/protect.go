package attempt

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Bounds of the protected paths' hashing (protectedState).
const (
	maxProtectedEntries = 20_000
	maxProtectedBytes   = 1 << 30
)

// protectedState maps every entry at or below the protected paths of the workspace ws
// (workspace-relative, slash-separated) to its state: "absent", "d" (a directory),
// "f <0644|0755> <sha256>" (a regular file), "l <target>" (a symbolic link, never
// followed) or "o <type>" (anything else). It reads through an os.Root, so a link
// never leads it out of the workspace. Errors: a read error, more than
// maxProtectedEntries entries or maxProtectedBytes bytes.
func protectedState(ws string, paths []string) (map[string]string, error) {
	out := map[string]string{}
	if len(paths) == 0 {
		return out, nil
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var budget int64 = maxProtectedBytes
	for _, p := range paths {
		fi, err := root.Lstat(filepath.FromSlash(p))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			out[p] = "absent"
			continue
		case err != nil:
			return nil, err
		case !fi.IsDir():
			if out[p], err = entryState(root, p, fi, &budget); err != nil {
				return nil, err
			}
			continue
		}
		err = fs.WalkDir(root.FS(), p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if len(out) >= maxProtectedEntries {
				return fmt.Errorf("more than %d protected entries", maxProtectedEntries)
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			out[q], err = entryState(root, q, info, &budget)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// entryState is one entry's state (protectedState), hashing a regular file against
// the remaining byte budget.
func entryState(root *os.Root, p string, fi fs.FileInfo, budget *int64) (string, error) {
	switch m := fi.Mode(); {
	case m.IsDir():
		return "d", nil
	case m&fs.ModeSymlink != 0:
		t, err := root.Readlink(filepath.FromSlash(p))
		return "l " + t, err
	case !m.IsRegular():
		return "o " + m.Type().String(), nil
	}
	if *budget -= fi.Size(); *budget < 0 {
		return "", fmt.Errorf("the protected files hold more than %d bytes", maxProtectedBytes)
	}
	f, err := root.Open(filepath.FromSlash(p))
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	mode := "0644"
	if fi.Mode()&0o111 != 0 {
		mode = "0755"
	}
	return "f " + mode + " " + hex.EncodeToString(h.Sum(nil)), nil
}

// changedPaths lists what differs between two protected states, sorted:
// "path modified", "path added" or "path removed".
func changedPaths(before, after map[string]string) []string {
	var out []string
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok || (a == "absent" && b != "absent"):
			out = append(out, p+" removed")
		case b == "absent" && a != "absent":
			out = append(out, p+" added")
		case a != b:
			out = append(out, p+" modified")
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			out = append(out, p+" added")
		}
	}
	slices.Sort(out)
	return out
}
