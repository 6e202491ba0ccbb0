package hostlease

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/agentproof/agentproof/environment"
)

// NewLaunchDir creates the next free launch directory <l.Dir>/launches/<n>, n from 1
// (mode 0755: the agent user, or the container engine, reads the launch's generated
// files through it), and returns n and its path.
func NewLaunchDir(l *environment.Lease) (int, string, error) {
	root := filepath.Join(l.Dir, "launches")
	for n := 1; n < 1<<20; n++ {
		dir := filepath.Join(root, strconv.Itoa(n))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return n, dir, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return 0, "", err
		}
	}
	return 0, "", errors.New("too many launches")
}

// NewLaunch makes the host directories of a lease's next launch: its launch
// directory (NewLaunchDir) and its scratch space on the lease disk (Scratch, with
// runsMode, uid:gid and names as there), and returns the launch's number n and both
// paths. Errors: NewLaunchDir's as they are; the scratch space's wrapped as "fresh
// scratch space: …", after the launch directory is removed again.
func NewLaunch(l *environment.Lease, disk string, runsMode os.FileMode, uid, gid int, names ...string) (n int, dir, scratch string, err error) {
	n, dir, err = NewLaunchDir(l)
	if err != nil {
		return 0, "", "", err
	}
	scratch, err = Scratch(l, disk, n, runsMode, uid, gid, names...)
	if err != nil {
		_ = os.RemoveAll(dir)
		return 0, "", "", fmt.Errorf("fresh scratch space: %w", err)
	}
	return n, dir, scratch, nil
}

// MakeScratch creates the scratch directories names (HOME's "home", /tmp's "tmp", …)
// under dir, each owned by uid:gid (mode 0700).
func MakeScratch(dir string, uid, gid int, names ...string) error {
	for _, name := range names {
		if err := MkdirOwned(filepath.Join(dir, name), uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// Scratch returns the scratch space of launch n of l (the directory holding its
// names, MakeScratch): the lease disk itself when the lease is reused (its scratch
// made at Setup), else a fresh <disk>/runs/<n> owned by uid:gid (runs/ made with mode
// runsMode when missing). Errors: the directories' creation.
func Scratch(l *environment.Lease, disk string, n int, runsMode os.FileMode, uid, gid int, names ...string) (string, error) {
	if l.Reuse {
		return disk, nil
	}
	scratch := filepath.Join(disk, "runs", strconv.Itoa(n))
	err := os.MkdirAll(filepath.Dir(scratch), runsMode)
	if err == nil {
		err = MkdirOwned(scratch, uid, gid)
	}
	if err == nil {
		err = MakeScratch(scratch, uid, gid, names...)
	}
	return scratch, err
}
