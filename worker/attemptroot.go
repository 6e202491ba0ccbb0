package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentproof/agentproof/atomicfile"
)

// Stale attempt temp roots (docs/processes.md "Stale attempt temp roots"). An attempt
// root holds key files (the instance's board token and master key). A controller
// killed with SIGKILL cannot remove its roots; the next controller sweeps them. A root
// is swept only when it carries an owner record that no live process holds locked: the
// owner keeps an exclusive flock on the record for as long as it uses the root, and the
// kernel drops that lock when the owner dies, however it dies. The record is created
// already locked (locked under a temporary name, then renamed into place), so a sweeper
// never sees an unlocked record of a live owner. A root without a record (made by an
// older agentproof, or a provisioned fixture workspace) is never swept.

// AttemptRootPrefix begins the name of every attempt temp root.
const AttemptRootPrefix = "agentproof-attempt-"

// RootOwnerFile is the owner record inside an attempt root: JSON {pid, createdAt}
// (for people; the lock is what counts).
const RootOwnerFile = ".agentproof-owner"

// RootClaim is a live owner's lock on an attempt root. Keep it reachable while the root
// is in use (a collected claim's file is closed, which drops the lock).
type RootClaim struct {
	root string
	f    *os.File
}

// ClaimAttemptRoot writes root's owner record, locked by this process, and returns the
// claim. root must be an existing directory this process created for an attempt.
// Errors: the record could not be created or locked.
func ClaimAttemptRoot(root string) (*RootClaim, error) {
	p, err := atomicfile.Create(filepath.Join(root, RootOwnerFile), 0o600, atomicfile.NoSync())
	if err != nil {
		return nil, fmt.Errorf("worker: creating the owner record of %s: %w", root, err)
	}
	fail := func(err error) (*RootClaim, error) {
		p.Discard()
		return nil, fmt.Errorf("worker: claiming %s: %w", root, err)
	}
	if err := flockNB(p.File()); err != nil {
		return fail(err)
	}
	b, _ := json.Marshal(map[string]any{"pid": os.Getpid(), "createdAt": time.Now().UTC().Format(time.RFC3339Nano)})
	if _, err := p.Write(append(b, '\n')); err != nil {
		return fail(err)
	}
	f, err := p.Publish()
	if err != nil {
		return nil, fmt.Errorf("worker: claiming %s: %w", root, err)
	}
	return &RootClaim{root: root, f: f}, nil
}

// Release removes the owner record (when the root still exists) and drops the lock:
// a released root is nobody's to sweep — it was removed, or it is kept on purpose. A
// nil claim is a no-op.
func (c *RootClaim) Release() error {
	if c == nil || c.f == nil {
		return nil
	}
	err := os.Remove(filepath.Join(c.root, RootOwnerFile))
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	c.f = nil
	return err
}

// SweepStaleRoots removes every attempt root (dir/agentproof-attempt-*, dir "" meaning
// os.TempDir()) that belongs to this user and whose owner record no live process
// holds locked, and returns how many it removed. The lock is held while the root is
// removed, so two sweepers never remove one root twice. Roots of live owners and
// roots without an owner record are left alone. Errors: dir unreadable, or a stale root
// that could not be removed (the count still includes the ones that were).
func SweepStaleRoots(dir string) (int, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("worker: listing %s for stale attempt roots: %w", dir, err)
	}
	uid := os.Geteuid()
	removed := 0
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), AttemptRootPrefix) || !e.IsDir() {
			continue // e.IsDir is false for a symlink
		}
		root := filepath.Join(dir, e.Name())
		info, err := os.Lstat(root)
		if err != nil || !info.IsDir() {
			continue
		}
		if st, ok := info.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid {
			continue
		}
		f, err := os.OpenFile(filepath.Join(root, RootOwnerFile), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue // no owner record: not ours to judge
		}
		if err := flockNB(f); err != nil {
			_ = f.Close() // a live owner holds it
			continue
		}
		if err := os.RemoveAll(root); err != nil {
			errs = append(errs, fmt.Errorf("worker: removing stale attempt root %s: %w", root, err))
		} else {
			removed++
		}
		_ = f.Close()
	}
	return removed, errors.Join(errs...)
}

// MemoryDir is the directory of a memory file system for state that holds secrets:
// /dev/shm, when it is a tmpfs this process can write with at least minFree bytes
// free; "" otherwise (no such file system, a read-only one, or one too small: the
// 64 MiB a container gets by default, say). What is kept there never reaches a disk.
// The answer is read when called (free space changes).
func MemoryDir(minFree uint64) string { return memoryDir(devShm, minFree) }

// devShm is where Linux mounts its shared-memory tmpfs.
const devShm = "/dev/shm"

// memoryDir is MemoryDir for the directory dir.
func memoryDir(dir string, minFree uint64) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Type != tmpfsMagic {
		return ""
	}
	if syscall.Access(dir, 2 /* W_OK */) != nil {
		return ""
	}
	if free := st.Bavail * uint64(st.Bsize); free < minFree {
		return ""
	}
	return dir
}

// tmpfsMagic is TMPFS_MAGIC of linux/magic.h, the f_type statfs(2) reports for a tmpfs.
const tmpfsMagic = 0x01021994
