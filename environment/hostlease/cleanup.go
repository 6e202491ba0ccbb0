package hostlease

import (
	"errors"
	"os"
	"time"

	"github.com/agentproof/agentproof/environment"
)

// Unmount records in r what l's disk holds (its files) and the mounts under l.Dir
// (Found), then unmounts them, retrying busy ones until wait passes; the mounts that
// remain go to r.Remaining and an unmount error to r.Errors.
func Unmount(l *environment.Lease, disk string, wait time.Duration, r *environment.CleanupReport) {
	ms, err := MountsUnder(l.Dir)
	if err == nil {
		r.Found.Mounts = ms
	}
	inv := Inventory(disk)
	r.Found.Files, r.Found.FileCount, r.Found.FileBytes = inv.Files, inv.FileCount, inv.FileBytes
	remaining, err := unmountAll(l.Dir, ms, err == nil, wait)
	r.Remaining.Mounts = remaining
	if err != nil {
		r.Errors = append(r.Errors, err.Error())
	}
}

// RemoveDirs removes l's lease directory (only once nothing is mounted under it,
// r.Remaining.Mounts empty: RemoveAll must never descend into a mounted filesystem it
// did not mean to empty) and its socket directory, and records in r what remains of
// either (the directory and the files under it) and the removals' errors.
func RemoveDirs(l *environment.Lease, r *environment.CleanupReport) {
	if len(r.Remaining.Mounts) == 0 {
		if err := os.RemoveAll(l.Dir); err != nil {
			r.Errors = append(r.Errors, err.Error())
		}
	}
	for _, dir := range []string{l.Dir, l.SocketDir} {
		// The socket directory holds only the bridge's sockets (the providers check its
		// shape, ValidSocketDir, before they clean up, so this never removes anything else).
		if dir == l.SocketDir {
			if err := os.RemoveAll(dir); err != nil {
				r.Errors = append(r.Errors, err.Error())
			}
		}
		if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
			rest := Inventory(dir)
			r.Remaining.Files = append(append(r.Remaining.Files, dir), rest.Files...)
			r.Remaining.FileCount += rest.FileCount + 1
			r.Remaining.FileBytes += rest.FileBytes
		}
	}
}
