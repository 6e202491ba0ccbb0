package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// Staged is a file written to a temporary file beside its destination and not yet put
// in place (Pending.Stage; CommitStaged puts many in place for one sync).
type Staged struct {
	// Path is the file's destination.
	Path string
	tmp  string
}

// Temp returns the name of the staged temporary file (to read the content back before
// the commit).
func (s Staged) Temp() string { return s.tmp }

// Stage ends the write without putting the file in place: the temporary file is given
// its mode and closed, not synced, and left for CommitStaged (or DiscardStaged).
// Errors: the mode cannot be set or the close fails; the temporary file is then
// removed.
func (p *Pending) Stage() (Staged, error) {
	if p.f == nil {
		return Staged{}, fmt.Errorf("writing %s: the write has ended", p.path)
	}
	tmp := p.f.Name()
	if err := p.finish(false, true); err != nil {
		return Staged{}, err
	}
	return Staged{Path: p.path, tmp: tmp}, nil
}

// CommitStaged puts staged files in place, in order: one sync of each file system they
// are on (SyncFilesystem) makes their content durable, then each is renamed over its
// destination and each directory is fsynced once. A reader, a killed process and an
// operating-system crash see each destination's old file or its complete new one, as
// with a durable WriteFile, for one sync instead of two fsyncs per file. Error: the
// first failure; the files not yet renamed are then removed (DiscardStaged).
func CommitStaged(files []Staged) (err error) {
	done := 0
	defer func() {
		if err != nil {
			DiscardStaged(files[done:])
		}
	}()
	dirs, err := syncFilesystemsOf(files)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.Rename(f.tmp, f.Path); err != nil {
			return fmt.Errorf("renaming %s into place: %w", f.Path, err)
		}
		done++
	}
	for _, dir := range dirs {
		if err := syncDir(dir); err != nil {
			return fmt.Errorf("syncing %s: %w", dir, err)
		}
	}
	return nil
}

// syncFilesystemsOf syncs, once each, the file systems holding the directories of
// files, and returns those directories (each once, in order of first use).
func syncFilesystemsOf(files []Staged) ([]string, error) {
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
			return nil, fmt.Errorf("syncing %s: %w", f.Path, err)
		}
		if !synced[st.Dev] {
			synced[st.Dev] = true
			if err := SyncFilesystem(dir); err != nil {
				return nil, err
			}
		}
	}
	return dirs, nil
}

// DiscardStaged removes the temporary files of staged files that will not be
// committed.
func DiscardStaged(files []Staged) {
	for _, f := range files {
		_ = os.Remove(f.tmp)
	}
}

// SyncFilesystem makes everything written to the file system that holds dir durable
// (syncfs(2): every dirty file, directory and rename on it, then the device's cache
// flush), for example files written with NoSync before a durable file that refers to
// them. Errors: dir cannot be opened, or the sync failed.
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
