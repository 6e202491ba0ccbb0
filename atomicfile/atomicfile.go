// Package atomicfile writes files so that a reader, or a process killed at any moment,
// sees either the previous file or the complete new one, never a partial file: the
// bytes go to a temporary file in the destination's directory, which is then renamed
// over the destination. It is the one way agentproof replaces a file.
//
// A durable write (the default) also fsyncs the file before the rename and the
// directory after it, so that an operating-system crash too leaves the old file or the
// complete new one. NoSync skips both fsyncs: a reader and a killed process still see
// whole files (the rename is atomic and the page cache outlives the process), but a
// crash may lose the file or leave it empty. It is for files thrown away after such a
// crash (an ephemeral instance home) or made durable together later (SyncFilesystem,
// CommitStaged).
//
// The file's mode is set exactly (the umask does not apply). Temporary files are named
// "." + the destination's base name + ".tmp-" + random characters (IsTemp); a failed
// write removes its temporary file and leaves the destination unchanged.
//
// github.com/google/renameio/v2 does the temporary file and the rename, but it cannot
// do four things agentproof needs: it never fsyncs the directory after the rename (the
// rename itself is then not durable), it always fsyncs the file (no NoSync for
// ephemeral homes), it cannot leave a file staged to be renamed after one syncfs(2) of
// many (CommitStaged) and it cannot create a file without replacing one (Exclusive).
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Option changes how Create and WriteFile write a file.
type Option func(*config)

type config struct {
	noSync    bool
	makeDirs  bool
	exclusive bool
}

// NoSync skips the fsync of the file and of its directory (see the package doc).
func NoSync() Option { return func(c *config) { c.noSync = true } }

// MakeDirs creates the destination's directory and its parents (mode 0o755) when it is
// missing; without it a missing directory is an error.
func MakeDirs() Option { return func(c *config) { c.makeDirs = true } }

// Exclusive makes the write create the destination and never replace one: the
// temporary file is linked to the destination (link(2)), which fails when it exists.
// A failed Exclusive write leaves no destination: when the directory sync after the
// link fails, the new destination is removed again.
func Exclusive() Option { return func(c *config) { c.exclusive = true } }

// tempMark is what a temporary file's name holds after "." and the destination's name.
const tempMark = ".tmp-"

// IsTemp reports whether name (a base name) is the name of a temporary file of this
// package: one a write in progress, or a process killed during one, left.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, tempMark)
}

// WriteFile writes data to path with mode perm (see the package doc and the options).
// Errors name the step and path: the temporary file cannot be created (a missing
// directory without MakeDirs), written, given its mode, synced or closed, the rename
// (or, Exclusive, the link: the destination exists) fails, or the directory cannot be
// synced. On an error path is unchanged, except that a failed directory sync leaves
// the new file in place (not with Exclusive) without the guarantee that it survives a
// crash.
func WriteFile(path string, data []byte, perm fs.FileMode, opts ...Option) error {
	p, err := Create(path, perm, opts...)
	if err != nil {
		return err
	}
	if _, err := p.Write(data); err != nil {
		p.Discard()
		return err
	}
	return p.Commit()
}

// Pending is the temporary file of one write of a destination, open for writing until
// Commit, Publish, Stage or Discard ends it. Not safe for concurrent use.
type Pending struct {
	f    *os.File
	path string
	perm fs.FileMode
	cfg  config
}

// Create starts a write of path with mode perm: it creates the temporary file in
// path's directory. Errors: the temporary file cannot be created (the directory is
// missing and MakeDirs was not given, or it cannot be created or written to).
func Create(path string, perm fs.FileMode, opts ...Option) (*Pending, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	dir := filepath.Dir(path)
	pattern := "." + filepath.Base(path) + tempMark + "*"
	f, err := os.CreateTemp(dir, pattern)
	if cfg.makeDirs && errors.Is(err, fs.ErrNotExist) {
		// The directory is made only when it is missing (most writes go into one that
		// exists: no stat of it first).
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating the directory of %s: %w", path, err)
		}
		f, err = os.CreateTemp(dir, pattern)
	}
	if err != nil {
		return nil, fmt.Errorf("creating a temporary file for %s: %w", path, err)
	}
	return &Pending{f: f, path: path, perm: perm, cfg: cfg}, nil
}

// Path returns the destination.
func (p *Pending) Path() string { return p.path }

// File returns the open temporary file (to change its owner or lock it, say); write
// through Write, and never close it.
func (p *Pending) File() *os.File { return p.f }

// Write appends b to the temporary file. Errors name the destination.
func (p *Pending) Write(b []byte) (int, error) {
	n, err := p.f.Write(b)
	if err != nil {
		return n, fmt.Errorf("writing %s: %w", p.path, err)
	}
	return n, nil
}

// ReadFrom appends what r holds up to its end to the temporary file (from a file, the
// kernel copies it: copy_file_range(2)); io.Copy to a Pending uses it. Errors name the
// destination.
func (p *Pending) ReadFrom(r io.Reader) (int64, error) {
	n, err := p.f.ReadFrom(r)
	if err != nil {
		return n, fmt.Errorf("writing %s: %w", p.path, err)
	}
	return n, nil
}

// Discard ends the write without a file: the temporary file is closed and removed.
// Discarding an ended write does nothing.
func (p *Pending) Discard() {
	if p.f == nil {
		return
	}
	_ = p.f.Close()
	_ = os.Remove(p.f.Name())
	p.f = nil
}

// Commit puts the file in place: it is given its mode, synced (unless NoSync), closed,
// renamed over the destination (Exclusive: linked to it) and the directory synced
// (unless NoSync). Errors as WriteFile's; on an error before the rename the temporary
// file is removed.
func (p *Pending) Commit() error {
	_, err := p.publish(true)
	return err
}

// Publish is Commit keeping the file open: the caller gets the open file, under its
// new name, and closes it (a lock taken on it through File holds on). Errors as
// Commit's; on an error the temporary file is closed and removed.
func (p *Pending) Publish() (*os.File, error) { return p.publish(false) }

// publish is Commit (closing) or Publish (not closing, the open file returned).
func (p *Pending) publish(closing bool) (*os.File, error) {
	if p.f == nil {
		return nil, fmt.Errorf("writing %s: the write has ended", p.path)
	}
	f, tmp := p.f, p.f.Name()
	if err := p.finish(!p.cfg.noSync, closing); err != nil {
		return nil, err
	}
	if err := p.place(tmp); err != nil {
		if !closing {
			_ = f.Close()
		}
		_ = os.Remove(tmp)
		return nil, err
	}
	if !p.cfg.noSync {
		if err := syncDir(filepath.Dir(p.path)); err != nil {
			if !closing {
				_ = f.Close()
			}
			if p.cfg.exclusive {
				_ = os.Remove(p.path)
			}
			return nil, fmt.Errorf("syncing the directory of %s: %w", p.path, err)
		}
	}
	if closing {
		return nil, nil
	}
	return f, nil
}

// finish gives the temporary file its mode, syncs it when sync and closes it when
// closing; the write is then ended. On an error the file is closed and removed.
func (p *Pending) finish(sync, closing bool) error {
	f := p.f
	p.f = nil
	fail := func(step string, err error) error {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return fmt.Errorf("%s %s: %w", step, p.path, err)
	}
	if err := f.Chmod(p.perm); err != nil {
		return fail("setting the mode of", err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			return fail("syncing", err)
		}
	}
	if closing {
		if err := f.Close(); err != nil {
			_ = os.Remove(f.Name())
			return fmt.Errorf("closing %s: %w", p.path, err)
		}
	}
	return nil
}

// place gives the closed or open temporary file tmp the destination's name: a rename,
// or with Exclusive a link (the temporary name then removed).
func (p *Pending) place(tmp string) error {
	if !p.cfg.exclusive {
		if err := os.Rename(tmp, p.path); err != nil {
			return fmt.Errorf("renaming %s into place: %w", p.path, err)
		}
		return nil
	}
	if err := os.Link(tmp, p.path); err != nil {
		return fmt.Errorf("linking %s into place: %w", p.path, err)
	}
	_ = os.Remove(tmp)
	return nil
}

// syncDir fsyncs the directory dir (so that a rename in it is durable).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
