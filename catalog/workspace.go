package catalog

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"

	wsource "github.com/agentproof/agentproof/workspace/source"
)

// Workspace is where each attempt's fresh workspace is seeded from (docs/workspaces.md):
// exactly one of
//
//   - Dir: a directory, relative to the catalog file that declares it (or absolute);
//   - Tar: a tar archive (.tar, .tar.gz or .tgz), likewise;
//   - Git with Commit: a git repository (a URL the user's git reaches, or a path,
//     relative to the catalog file or absolute) at a full commit id — a branch or tag
//     name is refused, since it names different files tomorrow.
//
// A case's workspace wins over its environment's. Source is the resolved source, set
// by validation; its digest is part of the suite definition (the "grading" member of
// FingerprintJSON, beside the declared keys), so a campaign that resumes after the
// files changed is refused.
type Workspace struct {
	Dir    string         `yaml:"dir"`
	Tar    string         `yaml:"tar"`
	Git    string         `yaml:"git"`
	Commit string         `yaml:"commit"`
	Source wsource.Source `yaml:"-"`
}

var workspaceType = reflect.TypeFor[Workspace]()

// FilesDir is the name of the directories of a catalog that hold workspace sources
// and verifier files: a catalog directory never reads the YAML files below one.
const FilesDir = "files"

// Workspace is the cell's workspace source: its case's, else its environment's, nil
// when neither declares one (the attempt's workspace starts empty).
func (c *Cell) Workspace() *Workspace {
	if c.Case != nil && c.Case.Workspace != nil {
		return c.Case.Workspace
	}
	if c.Environment != nil {
		return c.Environment.Workspace
	}
	return nil
}

// origin is the catalog file a declaration comes from: its part's file system and
// its name there, and its absolute OS path ("" for an embedded file).
type origin struct {
	fsys   fs.FS
	name   string
	osPath string
}

// validateWorkspace checks a workspace declaration of owner (a case or an
// environment, named by what) and resolves its source relative to the catalog file
// that declares it, computing its digest. Every problem names the field.
func (v *validator) validateWorkspace(w *Workspace, owner any, what string) {
	if w == nil {
		return
	}
	set := 0
	for _, f := range []string{w.Dir, w.Tar, w.Git} {
		if f != "" {
			set++
		}
	}
	at := v.at(w, owner)
	if set != 1 {
		v.add(at, "%s workspace needs exactly one of dir, tar or git", what)
		return
	}
	if w.Git == "" && w.Commit != "" {
		v.add(v.at(&w.Commit, w, owner), "%s workspace commit belongs to a git source", what)
		return
	}
	o, ok := v.c.origins[at.File]
	if !ok {
		v.add(at, "%s workspace: the catalog file that declares it is not known", what)
		return
	}
	var err error
	switch {
	case w.Dir != "":
		err = w.resolveDir(o)
	case w.Tar != "":
		err = w.resolveTar(o)
	default:
		err = w.resolveGit(o)
	}
	if err != nil {
		v.add(at, "%s workspace: %v", what, err)
	}
}

// resolveDir resolves a directory source and computes its tree digest.
func (w *Workspace) resolveDir(o origin) error {
	fsys, ref, err := o.resolve(w.Dir, true)
	if err != nil {
		return fmt.Errorf("dir %q: %w", w.Dir, err)
	}
	d, err := wsource.TreeDigest(fsys, wsource.Limits{})
	if err != nil {
		return fmt.Errorf("dir %q: %w", w.Dir, err)
	}
	w.Source = wsource.Source{Kind: wsource.KindDir, FS: fsys, Name: ".", Ref: ref, Digest: d}
	return nil
}

// resolveTar resolves an archive source and computes the digest of its bytes.
func (w *Workspace) resolveTar(o origin) error {
	if !strings.HasSuffix(w.Tar, ".tar") && !strings.HasSuffix(w.Tar, ".tar.gz") && !strings.HasSuffix(w.Tar, ".tgz") {
		return fmt.Errorf("tar %q must name a .tar, .tar.gz or .tgz file", w.Tar)
	}
	dirFS, ref, err := o.resolve(path.Dir(filepath.ToSlash(w.Tar)), false)
	if err != nil {
		return fmt.Errorf("tar %q: %w", w.Tar, err)
	}
	name := path.Base(filepath.ToSlash(w.Tar))
	d, err := wsource.FileDigest(dirFS, name)
	if err != nil {
		return fmt.Errorf("tar %q: %w", w.Tar, err)
	}
	w.Source = wsource.Source{Kind: wsource.KindTar, FS: dirFS, Name: name, Ref: path.Join(ref, name), Digest: d}
	return nil
}

// resolveGit checks a git source's commit and makes a local path absolute (relative to
// the catalog file); the repository itself is reached when a campaign fetches it.
func (w *Workspace) resolveGit(o origin) error {
	if !wsource.ValidCommit(w.Commit) {
		if w.Commit == "" {
			return fmt.Errorf("git %q needs commit: the full commit id to seed from", w.Git)
		}
		return fmt.Errorf("commit %q must be a full commit id (40 or 64 lower-case hex digits), not a branch, tag or abbreviated id: a name moves, a commit does not", w.Commit)
	}
	repo := w.Git
	if !wsource.IsURL(repo) && !filepath.IsAbs(repo) {
		if o.osPath == "" {
			return fmt.Errorf("git %q: a repository path of the embedded catalog must be a URL", w.Git)
		}
		repo = filepath.Join(filepath.Dir(o.osPath), filepath.FromSlash(repo))
	}
	w.Source = wsource.Source{Kind: wsource.KindGit, Repo: repo, Commit: w.Commit, Ref: w.Git, Digest: "git:" + w.Commit}
	return nil
}

// resolve returns the file system of directory p (slash-separated, relative to the
// declaring file's directory; an absolute OS path for a file on disk) and how to name
// it. An embedded catalog's path must stay inside it; needDir requires p to be an
// existing directory.
func (o origin) resolve(p string, needDir bool) (fs.FS, string, error) {
	if o.osPath == "" {
		full := path.Join(path.Dir(o.name), p)
		if !fs.ValidPath(full) || strings.HasPrefix(p, "/") {
			return nil, "", fmt.Errorf("a path of the embedded catalog must stay inside it")
		}
		sub, err := fs.Sub(o.fsys, full)
		if err != nil {
			return nil, "", err
		}
		if fi, err := fs.Stat(o.fsys, full); err != nil || !fi.IsDir() {
			return nil, "", fmt.Errorf("%s is not a directory of the embedded catalog", full)
		}
		return sub, full, nil
	}
	dir := filepath.FromSlash(p)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(o.osPath), dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, "", err
	}
	if needDir && !fi.IsDir() {
		return nil, "", fmt.Errorf("%s is not a directory", dir)
	}
	return os.DirFS(dir), p, nil
}
