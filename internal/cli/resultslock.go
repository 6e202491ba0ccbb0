package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gofrs/flock"
)

// ResultsLockFile is the lock file in a results root. `run` holds an exclusive flock on
// it while its campaign writes (from before it checks the campaign directory until the
// campaign report and history.json are written); `report` and `report merge` hold it
// while they write. The kernel releases it when the process dies, even by SIGKILL.
const ResultsLockFile = ".agentproof-results.lock"

// lockResults takes the results root's lock without waiting. With create, the root is
// created first (run, report merge); without, a missing root is left to the caller's
// own error (report reads it) and nothing is locked. It returns the function that
// releases the lock. A root another agentproof process holds is a *UsageError (exit 2)
// naming the root and the lock file: two writers never share one results directory.
func lockResults(root string, create bool) (unlock func(), err error) {
	if create {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, usageErrorf("--results: %v", err)
		}
	} else if fi, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.IsDir()) {
		return func() {}, nil
	}
	path := filepath.Join(root, ResultsLockFile)
	l := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o644))
	ok, err := l.TryLock()
	if err != nil {
		return nil, usageErrorf("--results: locking %s: %v", path, err)
	}
	if !ok {
		return nil, usageErrorf("results directory %s is in use by another agentproof run, report or report merge (it holds %s); "+
			"wait for it to finish or choose another --results", root, ResultsLockFile)
	}
	return func() { l.Close() }, nil
}
