package hostlease

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentproof/agentproof/environment"
)

// The lease's disk is a tmpfs mounted on the host at <lease dir>/disk with
// size=DiskBytes: every byte the agent can write (workspace, HOME, /tmp, /dev/shm) is
// on it, so a full disk is ENOSPC for the agent and nothing for the host. Its pages
// are RAM and are charged to the memory cgroup of the process that writes them, so the
// memory limit covers them too (docs/environments.md).

// MountDisk mounts a tmpfs of size bytes on dir (nosuid, nodev; its root owned by
// uid:gid, mode 0700).
func MountDisk(dir string, size int64, uid, gid int) error {
	opts := fmt.Sprintf("size=%d,mode=0700,uid=%d,gid=%d", size, uid, gid)
	if err := syscall.Mount("agentproof-lease", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mounting the lease disk (tmpfs %s) on %s: %w", opts, dir, err)
	}
	return nil
}

// MountsUnder lists the mount points in /proc/self/mountinfo at or under dir, deepest
// first.
func MountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20) // grows from 4 KiB as a line needs
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		if p := UnescapeMount(fields[4]); environment.Within(dir, p) {
			out = append(out, p)
		}
	}
	// deepest first, so nested mounts come off before their parents
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if len(out[j]) > len(out[i]) {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out, sc.Err()
}

// UnmountAll unmounts every mount at or under dir and reports those that remain. A
// busy mount is retried until wait passes; it is never detached lazily, because a lazy
// detach hides a mount that something still uses instead of confirming it gone.
func UnmountAll(dir string, wait time.Duration) (remaining []string, err error) {
	return unmountAll(dir, nil, false, wait)
}

// unmountAll is UnmountAll; when known, ms are the mounts under dir as just read
// (MountsUnder), so its first round does not read the mount table again.
func unmountAll(dir string, ms []string, known bool, wait time.Duration) (remaining []string, err error) {
	deadline := time.Now().Add(wait)
	for {
		if !known {
			if ms, err = MountsUnder(dir); err != nil {
				return nil, fmt.Errorf("reading mounts: %w", err)
			}
		}
		known = false
		if len(ms) == 0 {
			return nil, nil
		}
		var errs []error
		for _, m := range ms {
			if err := syscall.Unmount(m, unix.UMOUNT_NOFOLLOW); err != nil && !errors.Is(err, syscall.EINVAL) {
				errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
			}
		}
		if time.Now().After(deadline) {
			ms, _ = MountsUnder(dir)
			return ms, errors.Join(errs...)
		}
		if len(errs) > 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// Inventory counts the files under dir (not following symbolic links), keeping the
// first environment.MaxInventoryFiles paths.
func Inventory(dir string) environment.Inventory {
	var inv environment.Inventory
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return nil
		}
		inv.FileCount++
		if len(inv.Files) < environment.MaxInventoryFiles {
			inv.Files = append(inv.Files, path)
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				inv.FileBytes += fi.Size()
			}
		}
		return nil
	})
	return inv
}

// DiskFull reports whether the filesystem at dir has less than one block free.
func DiskFull(dir string) (bool, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false, err
	}
	return st.Bavail == 0, nil
}

// ChownTree gives every file under root (root included, symbolic links themselves)
// to uid:gid.
func ChownTree(root string, uid, gid int) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
}

// MkdirOwned creates path (mode 0700) owned by uid:gid. Errors: the directory's
// creation (os.ErrExist when it exists) or its chown.
func MkdirOwned(path string, uid, gid int) error {
	if err := os.Mkdir(path, 0o700); err != nil {
		return err
	}
	return os.Lchown(path, uid, gid)
}

// UnescapeMount undoes mountinfo's octal escapes (\040 for a space, …).
func UnescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
