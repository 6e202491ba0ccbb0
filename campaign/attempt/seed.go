package attempt

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/agentproof/agentproof/verdict"
	wsource "github.com/agentproof/agentproof/workspace/source"
)

// gitCacheDir is where git sources are cloned (bare, one per repository, reused by
// every attempt and campaign): LocalExecutor.GitCache, else agentproof/git in the
// user's cache directory.
func (x *LocalExecutor) gitCacheDir() (string, error) {
	if x.GitCache != "" {
		return x.GitCache, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no directory for the git sources' clones (set XDG_CACHE_HOME or HOME): %w", err)
	}
	return filepath.Join(base, "agentproof", "git"), nil
}

// seedWorkspace writes the cell's workspace source (catalog.Cell.Workspace) into the
// attempt's fresh workspace, before any fixture or agent exists, and returns what it
// observed: the record result.json keeps, with the digest of what was read. A cell
// without a source gets nil. A source that cannot be fetched or read, or whose digest
// is no longer the one the suite definition recorded at load (its files changed since),
// is a permanent harness fault: the candidate never saw a workspace.
func (x *LocalExecutor) seedWorkspace(ctx context.Context, a *attempt, dst string) (*wsource.Record, *verdict.Fault) {
	w := a.plan.Cell.Workspace()
	if w == nil {
		return nil, nil
	}
	s := w.Source
	var opt wsource.Options
	if s.Kind == wsource.KindGit {
		cache, err := x.gitCacheDir()
		if err == nil {
			opt.GitCache = cache
			err = wsource.Fetch(ctx, cache, s.Repo, s.Commit)
		}
		if err != nil {
			return nil, verdict.HarnessFault(fmt.Errorf("workspace source: %w", err), false)
		}
	}
	seeded, err := wsource.Materialize(ctx, s, dst, opt)
	if err != nil {
		return nil, verdict.HarnessFault(err, false)
	}
	if err := ownLikeRoot(dst); err != nil {
		return nil, verdict.HarnessFault(fmt.Errorf("workspace source %s: giving the seeded files to the workspace's owner: %w", s.Ref, err), false)
	}
	if seeded.Digest != s.Digest {
		return nil, verdict.HarnessFault(fmt.Errorf("workspace source %s changed since the catalog was loaded: its digest was %s, the files read now have %s", s.Ref, s.Digest, seeded.Digest), false)
	}
	a.log.note("workspace seeded from %s %s (%s): %d entries, %d bytes", s.Kind, s.Ref, seeded.Digest, seeded.Files, seeded.Bytes)
	rec := s.Record()
	return &rec, nil
}

// ownLikeRoot gives every entry below dst to dst's own owner when that is not this
// process's user (a sandbox lease's workspace belongs to the sandbox user, and the
// agent must be able to change the files it was seeded with). Links are changed, never
// followed. It runs before any agent exists.
func ownLikeRoot(dst string) error {
	fi, err := os.Lstat(dst)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) == os.Geteuid() {
		return nil
	}
	uid, gid := int(st.Uid), int(st.Gid)
	return filepath.WalkDir(dst, func(p string, _ fs.DirEntry, err error) error {
		if err != nil || p == dst {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}
