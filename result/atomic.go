package result

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// WriteFileAtomic writes data to path through a temporary file in the same directory
// (created 0644), fsyncs it, renames it over path and fsyncs the directory, so a reader
// sees either the old or the new file, never a torn one. The directory is created when
// missing.
func WriteFileAtomic(path string, data []byte) error { return writeFile(path, data, true) }

// WriteFileReplace is WriteFileAtomic without the fsyncs: a reader, and a process
// killed at any moment, still see the old or the complete new file (the rename is
// atomic; the page cache outlives the process), but an operating-system crash may
// lose the file or leave it empty until the caller makes the file system durable
// (SyncFilesystem). The directory is created when missing.
func WriteFileReplace(path string, data []byte) error { return writeFile(path, data, false) }

// writeFile is WriteFileAtomic, fsyncing only when durable.
func writeFile(path string, data []byte, durable bool) error {
	f, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	return commitTempWith(f, path, durable)
}

// writeTemp writes data to a new temporary file of an atomic write of path (createTemp)
// and returns it open; on an error nothing is left.
func writeTemp(path string, data []byte) (*os.File, error) {
	f, err := createTemp(path)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return f, nil
}

// closeStaged makes a staged temporary file (written, open) 0644 and closes it; on an
// error it is removed.
func closeStaged(f *os.File, path string) error {
	err := f.Chmod(0o644)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("closing %s: %w", path, err)
	}
	return nil
}

// SyncFilesystem makes everything written to the file system that holds dir durable
// (syncfs(2): every dirty file, directory and rename on it, then the device's cache
// flush), for example the files an attempt wrote with WriteFileReplace before the
// result that refers to them is written with WriteFileAtomic. Error: dir cannot be
// opened, or the sync failed.
func SyncFilesystem(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing the file system of %s: %w", dir, err)
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return fmt.Errorf("syncing the file system of %s: %w", dir, err)
	}
	return nil
}

// CommitStaged puts staged files (GuardedWriter.Stage) in place, in order: one sync of
// the file system they are on (SyncFilesystem, once per file system) makes their
// content durable, then each is renamed over its path and each directory is fsynced
// once. A reader, a killed process and an operating-system crash see each path's old
// file or its complete new one, as with WriteFileAtomic, for one sync instead of two
// fsyncs per file. Error: the first failure; the files not yet renamed are then
// removed (DiscardStaged).
func CommitStaged(files []StagedFile) (err error) {
	done := 0
	defer func() {
		if err != nil {
			DiscardStaged(files[done:])
		}
	}()
	var dirs []string
	synced := map[uint64]bool{}
	for _, f := range files {
		dir := filepath.Dir(f.Path)
		if slices.Contains(dirs, dir) {
			continue
		}
		dirs = append(dirs, dir)
		var st unix.Stat_t
		if err := unix.Stat(dir, &st); err != nil {
			return fmt.Errorf("syncing %s: %w", f.Path, err)
		}
		if !synced[st.Dev] {
			synced[st.Dev] = true
			if err := SyncFilesystem(dir); err != nil {
				return err
			}
		}
	}
	for _, f := range files {
		if err := os.Rename(f.tmp, f.Path); err != nil {
			return fmt.Errorf("renaming into %s: %w", f.Path, err)
		}
		done++
	}
	for _, dir := range dirs {
		d, err := os.Open(dir)
		if err != nil {
			return fmt.Errorf("syncing %s: %w", dir, err)
		}
		err = d.Sync()
		_ = d.Close()
		if err != nil {
			return fmt.Errorf("syncing %s: %w", dir, err)
		}
	}
	return nil
}

// DiscardStaged removes the temporary files of staged files that will not be committed.
func DiscardStaged(files []StagedFile) {
	for _, f := range files {
		if f.f != nil {
			_ = f.f.Close()
		}
		_ = os.Remove(f.tmp)
	}
}

// createTemp creates the temporary file of an atomic write of path in path's directory
// (created when missing).
func createTemp(path string) (*os.File, error) {
	dir := filepath.Dir(path)
	pattern := "." + filepath.Base(path) + ".tmp-*"
	f, err := os.CreateTemp(dir, pattern)
	if errors.Is(err, fs.ErrNotExist) {
		// The directory is made only when it is missing (most writes go into one
		// that exists: no stat of it first).
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
		f, err = os.CreateTemp(dir, pattern)
	}
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return f, nil
}

// commitTemp finishes an atomic write: f (from createTemp, written) is made 0644,
// fsynced, closed and renamed over path, and the directory fsynced. On any error f is
// removed.
func commitTemp(f *os.File, path string) error { return commitTempWith(f, path, true) }

// commitTempWith is commitTemp, fsyncing the file and the directory only when durable.
func commitTempWith(f *os.File, path string, durable bool) error {
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if durable {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("syncing %s: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("renaming into %s: %w", path, err)
	}
	ok = true
	if !durable {
		return nil
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
