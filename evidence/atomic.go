package evidence

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic writes data to path so that a reader (or a run killed at any moment)
// sees either the previous file or the complete new one, never a partial file
// (DESIGN.md "Files a campaign writes": temp file, fsync, rename). It creates a temp
// file named ".tmp-<base>-*" in path's directory (which must exist), writes and fsyncs
// it, sets its mode to perm, renames it over path and fsyncs the directory so that the
// rename itself is durable. On any failure the temp file is removed and the error,
// wrapped with the step and the file name, is returned; path is then unchanged.
// Concurrent writers of the same path are safe: the last rename wins and every version
// is complete.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	return writeFileAtomic(path, data, perm, true)
}

// WriteFileReplace is WriteFileAtomic without the fsyncs: a reader, or a process
// killed at any moment, still sees the previous file or the complete new one (the
// rename is atomic and the page cache outlives the process), but an operating-system
// crash may lose the file or leave it empty. It is for the files of an ephemeral
// instance home (server.Options.Ephemeral: an attempt's home, thrown away when the
// attempt ends and never reopened after such a crash), where a durable write would
// buy nothing and cost two disk flushes.
func WriteFileReplace(path string, data []byte, perm fs.FileMode) error {
	return writeFileAtomic(path, data, perm, false)
}

// writeFileAtomic is WriteFileAtomic, with durable saying whether the file and the
// rename are fsynced.
func writeFileAtomic(path string, data []byte, perm fs.FileMode, durable bool) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, ".tmp-"+base+"-*")
	if err != nil {
		return fmt.Errorf("evidence: creating temp file for %s: %w", path, err)
	}
	tmpName := tmp.Name()
	fail := func(step string, err error) error {
		_ = tmp.Close()
		_ = os.Remove(tmpName)
		return fmt.Errorf("evidence: %s %s: %w", step, path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail("writing", err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fail("setting the mode of", err)
	}
	if durable {
		if err := tmp.Sync(); err != nil {
			return fail("syncing", err)
		}
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmpName)
		return fmt.Errorf("evidence: closing %s: %w", path, err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		_ = os.Remove(tmpName)
		return fmt.Errorf("evidence: renaming %s into place: %w", path, err)
	}
	if !durable {
		return nil
	}
	return syncDir(dir)
}
