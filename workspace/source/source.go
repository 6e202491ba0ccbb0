// Package source seeds an attempt's fresh workspace from where a catalog says its files
// come from: a directory (of the catalog, or of the machine), a tar archive, or a git
// repository at a pinned commit (docs/workspaces.md). Every source has a digest that
// names its content: the SHA-256 of a directory's tree or of an archive's bytes, or the
// commit itself, so that two campaigns that seeded the same digest started from the
// same files.
//
// A source is untrusted input: an archive may name absolute paths, "..", devices or
// links that point out of the workspace. Materialize writes through an os.Root opened
// on the destination, so that nothing it writes can land outside it, and refuses every
// entry that is not a directory, a regular file or a symbolic link.
package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"sync"
)

// Kind names where a source's files come from.
type Kind string

// The kinds of source.
const (
	// KindDir is a directory: of the catalog (embedded or on disk), or any directory
	// of the machine its path names.
	KindDir Kind = "dir"
	// KindTar is a tar archive (".tar", or gzip-compressed ".tar.gz" / ".tgz").
	KindTar Kind = "tar"
	// KindGit is a git repository at a pinned commit, fetched with the machine's own
	// git (a local path or any URL that git reaches).
	KindGit Kind = "git"
)

// Source is one resolved workspace source.
//
//   - Kind says which of the fields below are used.
//   - FS and Name: the directory (Name ".") or the archive file (Name its path in FS)
//     of a dir or tar source. FS is an embedded file system or os.DirFS.
//   - Repo, Commit: a git source's repository (an absolute path or a URL) and its
//     full commit id (40 or 64 lower-case hex digits).
//   - Ref: how the catalog named the source (for records and messages).
//   - Digest: "sha256:<64 hex>" (a directory's tree digest, TreeDigest; an archive's
//     bytes) or "git:<commit>".
type Source struct {
	Kind   Kind
	FS     fs.FS
	Name   string
	Repo   string
	Commit string
	Ref    string
	Digest string
}

// Record is a source as result.json records it: its kind, how the catalog named it,
// the commit of a git source, and its digest.
type Record struct {
	Kind   Kind   `json:"kind"`
	Ref    string `json:"ref"`
	Commit string `json:"commit,omitempty"`
	Digest string `json:"digest"`
}

// Record returns s's record.
func (s Source) Record() Record {
	return Record{Kind: s.Kind, Ref: s.Ref, Commit: s.Commit, Digest: s.Digest}
}

var (
	commitPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`) })
	digestPattern = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(sha256:[0-9a-f]{64}|git:([0-9a-f]{40}|[0-9a-f]{64}))$`)
	})
)

// ValidCommit reports whether c is a full commit id: 40 (SHA-1) or 64 (SHA-256)
// lower-case hex digits. A branch or tag name, or an abbreviated id, is not one.
func ValidCommit(c string) bool { return commitPattern().MatchString(c) }

// ValidDigest reports whether d has the shape of a source digest.
func ValidDigest(d string) bool { return digestPattern().MatchString(d) }

// Problems lists what is wrong with a record (as read from a result); nil when valid.
func (r Record) Problems() []string {
	var p []string
	switch r.Kind {
	case KindDir, KindTar:
		if !strings.HasPrefix(r.Digest, "sha256:") || r.Commit != "" {
			p = append(p, fmt.Sprintf("a %s source has a sha256 digest and no commit", r.Kind))
		}
	case KindGit:
		if !ValidCommit(r.Commit) || r.Digest != "git:"+r.Commit {
			p = append(p, "a git source has a full commit and the digest git:<commit>")
		}
	default:
		p = append(p, fmt.Sprintf("kind %q is not dir, tar or git", r.Kind))
	}
	if !ValidDigest(r.Digest) {
		p = append(p, fmt.Sprintf("digest %q is not sha256:<64 hex> or git:<commit>", r.Digest))
	}
	if r.Ref == "" || len(r.Ref) > 4096 || strings.ContainsAny(r.Ref, "\x00\r\n") {
		p = append(p, "ref must be one line of at most 4096 bytes")
	}
	return p
}

// Options configure Materialize.
//
//   - GitCache: the directory holding the cached clones of git sources (Fetch's);
//     required for a git source.
//   - Limits: bounds on what is written (zero fields: the defaults).
type Options struct {
	GitCache string
	Limits   Limits
}

// Limits bound what one materialisation writes: at most MaxFiles entries and
// MaxBytes bytes of file content.
type Limits struct {
	MaxFiles int
	MaxBytes int64
}

// Default limits of a materialisation and of a directory's digest.
const (
	DefaultMaxFiles = 100_000
	DefaultMaxBytes = 4 << 30
)

func (l Limits) withDefaults() Limits {
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	return l
}

// Seeded says what Materialize wrote: entries and bytes of file content, and the
// digest observed of what it read (Digest's shape, computed as the files were read,
// never copied from the Source), so that a source that changed since its digest was
// recorded is caught.
type Seeded struct {
	Files  int
	Bytes  int64
	Digest string
}

// ErrLimit is wrapped by the errors of a source larger than its limits.
var ErrLimit = errors.New("workspace source exceeds its limits")

// Materialize writes s's files into dst, an existing directory (normally empty): the
// directory's tree, the archive's entries, or the commit's tree (without .git).
// Seeded.Digest is the digest of what was read. Errors: the source cannot be read or is over its limits (ErrLimit), an archive entry
// is unsafe (named in the error), a git source's commit is not in the cache (Fetch it
// first), ctx ended; dst may then hold part of the files.
func Materialize(ctx context.Context, s Source, dst string, opt Options) (Seeded, error) {
	root, err := os.OpenRoot(dst)
	if err != nil {
		return Seeded{}, fmt.Errorf("workspace source: %w", err)
	}
	defer root.Close()
	w := &writer{root: root, lim: opt.Limits.withDefaults()}
	switch s.Kind {
	case KindDir:
		if err = w.copyTree(ctx, s.FS); err == nil {
			// The digest of what was written: exactly the files the workspace holds.
			w.seeded.Digest, err = TreeDigest(root.FS(), w.lim)
		}
	case KindTar:
		w.seeded.Digest, err = w.extractFile(ctx, s.FS, s.Name)
	case KindGit:
		if err = w.checkout(ctx, opt.GitCache, s.Repo, s.Commit); err == nil {
			w.seeded.Digest = "git:" + s.Commit // git archive names the commit's own tree
		}
	default:
		err = fmt.Errorf("unknown source kind %q", s.Kind)
	}
	if err != nil {
		return w.seeded, fmt.Errorf("workspace source %s: %w", s.Ref, err)
	}
	return w.seeded, nil
}
