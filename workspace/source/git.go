package source

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"
)

// Git sources are fetched with the machine's own git (docs/workspaces.md): the user's
// git configuration and credentials reach what the user's git reaches. Each repository
// has a bare clone of its own in the cache directory, named by the SHA-256 of the
// repository's address, fetched once and reused; a campaign fetches before its first
// attempt (Fetch), and every attempt checks the commit's tree out of the clone (git
// archive) without touching the network.

// gitTimeout bounds one git command.
const gitTimeout = 10 * time.Minute

// CacheDir is the clone of repo in the cache directory cache.
func CacheDir(cache, repo string) string {
	sum := sha256.Sum256([]byte(repo))
	return filepath.Join(cache, hex.EncodeToString(sum[:16])+".git")
}

// IsURL reports whether a git source names a URL (scheme://… or the scp-like
// user@host:path) rather than a local path.
func IsURL(repo string) bool {
	if strings.Contains(repo, "://") {
		return true
	}
	at, colon := strings.Index(repo, "@"), strings.Index(repo, ":")
	return at > 0 && colon > at && !strings.Contains(repo[:colon], "/")
}

// Fetch makes sure commit of repo is in the cache directory cache (created if needed):
// it clones the repository bare on first use and, when the commit is missing, fetches
// its branches and tags, then the commit itself. Concurrent fetches of one repository
// take turns (a file lock beside the clone). Errors: git is missing, the repository
// cannot be reached, the commit is not in it (each named), ctx ended.
func Fetch(ctx context.Context, cache, repo, commit string) error {
	if !ValidCommit(commit) {
		return fmt.Errorf("git source %s: commit %q is not a full commit id", repo, commit)
	}
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return fmt.Errorf("git cache: %w", err)
	}
	dir := CacheDir(cache, repo)
	lock := flock.New(dir + ".lock")
	if err := lock.Lock(); err != nil {
		return fmt.Errorf("git cache lock: %w", err)
	}
	defer func() { _ = lock.Unlock() }()
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := cloneBare(ctx, repo, dir); err != nil {
			return err
		}
	}
	if hasCommit(ctx, dir, commit) {
		return nil
	}
	_, _ = git(ctx, dir, "fetch", "--quiet", "--", "origin", "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
	if hasCommit(ctx, dir, commit) {
		return nil
	}
	_, _ = git(ctx, dir, "fetch", "--quiet", "--", "origin", commit)
	if hasCommit(ctx, dir, commit) {
		return nil
	}
	return fmt.Errorf("git source %s: commit %s is not in the repository (its branches and tags were fetched)", repo, commit)
}

// cloneBare clones repo bare into dir through a temporary directory beside it, so
// that an interrupted clone leaves no half clone behind.
func cloneBare(ctx context.Context, repo, dir string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".clone-")
	if err != nil {
		return fmt.Errorf("git cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	dest := filepath.Join(tmp, "repo.git")
	if out, err := git(ctx, "", "clone", "--bare", "--quiet", "--", repo, dest); err != nil {
		return fmt.Errorf("git source %s: cloning: %w: %s", repo, err, out)
	}
	if err := os.Rename(dest, dir); err != nil {
		return fmt.Errorf("git cache: %w", err)
	}
	return nil
}

func hasCommit(ctx context.Context, dir, commit string) bool {
	_, err := git(ctx, dir, "cat-file", "-e", commit+"^{commit}")
	return err == nil
}

// git runs git with args (in the bare repository dir, when given), bounded by
// gitTimeout; it returns the command's trimmed standard error. Prompts are off: a
// repository that needs a password the user's git does not have fails, never waits.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	if dir != "" {
		args = append([]string{"--git-dir", dir}, args...)
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	return strings.TrimSpace(clip(stderr.String())), err
}

// checkout writes the tree of commit (in repo's clone in the cache directory cache)
// under the root, through git archive.
func (w *writer) checkout(ctx context.Context, cache, repo, commit string) error {
	if cache == "" {
		return errors.New("no git cache directory")
	}
	dir := CacheDir(cache, repo)
	if !hasCommit(ctx, dir, commit) {
		return fmt.Errorf("commit %s of %s is not in the cache %s (fetch it first)", commit, repo, dir)
	}
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "--git-dir", dir, "archive", "--format=tar", commit)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git archive: %w", err)
	}
	xerr := w.extract(ctx, out)
	if xerr != nil {
		cancel()
	}
	werr := cmd.Wait()
	switch {
	case xerr != nil:
		return xerr
	case werr != nil:
		return fmt.Errorf("git archive: %w: %s", werr, clip(stderr.String()))
	}
	return nil
}
