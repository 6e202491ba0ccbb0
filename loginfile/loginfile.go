// Package loginfile seeds a CLI's login file (a login_file credential, for example a
// subscription's auth.json) into a company-scoped HOME inside a disposable instance and
// destroys it at teardown (docs/secrets.md "Login files").
//
// Seed creates the HOME (mode 0700, refusing one that is a symbolic link, already
// exists, or lies outside the attempt's tree) and the file below it, created
// exclusively (O_CREAT|O_EXCL|O_NOFOLLOW) with mode 0600, through directory file
// descriptors so that no path component is followed through a symbolic link. The value
// never enters agent configuration or evidence: Seeded describes the file by path and
// size only, and Seed refuses a value the attempt's secret set does not hold (so that
// every evidence write redacts it). Destroy overwrites and removes the HOME and confirms
// that it is gone.
package loginfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/redact"
)

// HomesDir is the directory below an instance home that holds the company-scoped HOMEs.
const HomesDir = "login-homes"

// MaxPathDepth bounds the components of a login file's path below HOME.
const MaxPathDepth = 4

// MinTokenBytes is the shortest JSON string value of a login file that SecretValues
// lists as a secret of its own (bytes); shorter values (a "type", a user name) are too
// common to redact.
const MinTokenBytes = 12

// CompanyHome is the company-scoped HOME of company companyID in the instance home
// instanceHome: INSTANCE/login-homes/<companyID>. Errors: a company id that is not one
// path component.
func CompanyHome(instanceHome, companyID string) (string, error) {
	if companyID == "" || companyID == "." || companyID == ".." || strings.ContainsAny(companyID, "/\x00") {
		return "", fmt.Errorf("loginfile: company id %q is not one path component", companyID)
	}
	return filepath.Join(instanceHome, HomesDir, companyID), nil
}

// Spec is one login file to seed: Root is the attempt's tree (absolute; every HOME
// must lie below it), Home the company-scoped HOME to create (absolute, below Root; its
// parent must exist or lie below Root and is created 0700), Path the file's path below
// HOME (relative, e.g. ".grok/auth.json"; at most MaxPathDepth components, no "." or
// ".."), Value the file's bytes (1..api.MaxLoginFileBytes), and Secrets the attempt's
// secret set, which must already hold every value of SecretValues(Value).
type Spec struct {
	Root    string
	Home    string
	Path    string
	Value   []byte
	Secrets *redact.Set
}

// Seeded describes a seeded login file without its value: the HOME, the file's
// absolute path and its size (bytes). It is safe to record as evidence.
type Seeded struct {
	Home  string `json:"home"`
	File  string `json:"file"`
	Bytes int    `json:"bytes"`
}

// Error kinds of Seed, for errors.Is.
var (
	// ErrOutsideTree: the HOME is not below the attempt's tree.
	ErrOutsideTree = errors.New("the HOME is outside the attempt's tree")
	// ErrSymlink: the HOME (or a component of the file's path) is a symbolic link.
	ErrSymlink = errors.New("is a symbolic link")
	// ErrOccupied: the HOME (or the file) already exists.
	ErrOccupied = errors.New("is already occupied")
	// ErrUnregistered: the value is not in the attempt's secret set.
	ErrUnregistered = errors.New("the login file's value is not in the attempt's secret set")
)

// SecretValues are the texts of a login file that must be treated as secrets: the whole
// value and, when it is JSON, every string in it of at least MinTokenBytes bytes (a
// token printed alone is as much a leak as the file).
func SecretValues(value []byte) []string {
	out := []string{string(value)}
	var v any
	if json.Unmarshal(value, &v) != nil {
		return out
	}
	var walk func(any)
	walk = func(v any) {
		switch t := v.(type) {
		case string:
			if len(strings.TrimSpace(t)) >= MinTokenBytes && !slices.Contains(out, t) {
				out = append(out, t)
			}
		case map[string]any:
			for _, e := range t {
				walk(e)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(v)
	slices.Sort(out[1:])
	return out
}

// Seed creates s.Home (0700) and the login file s.Path below it (0600, exclusively) with
// s.Value. Nothing is left behind when it fails after creating the HOME. Errors (every
// check before anything is created; the value never appears in them): a bad Spec,
// ErrOutsideTree, ErrSymlink, ErrOccupied, ErrUnregistered (wrapped, naming the path),
// and I/O errors.
func Seed(s Spec) (*Seeded, error) {
	var p []string
	if !filepath.IsAbs(s.Root) {
		p = append(p, fmt.Sprintf("root %q must be an absolute path", s.Root))
	}
	if !filepath.IsAbs(s.Home) || filepath.Clean(s.Home) != s.Home {
		p = append(p, fmt.Sprintf("HOME %q must be a clean absolute path", s.Home))
	}
	parts, perr := splitPath(s.Path)
	if perr != "" {
		p = append(p, perr)
	}
	switch {
	case len(s.Value) == 0:
		p = append(p, "the login file is empty")
	case len(s.Value) > api.MaxLoginFileBytes:
		p = append(p, fmt.Sprintf("the login file is %d bytes; the limit is %d", len(s.Value), api.MaxLoginFileBytes))
	}
	if len(p) > 0 {
		return nil, fmt.Errorf("loginfile: %s", strings.Join(p, "; "))
	}
	have := s.Secrets.Values()
	for _, v := range SecretValues(s.Value) {
		if t := strings.TrimSpace(v); t != "" && !slices.Contains(have, t) {
			return nil, fmt.Errorf("loginfile: %s: %w", s.Home, ErrUnregistered)
		}
	}
	root, err := filepath.EvalSymlinks(s.Root)
	if err != nil {
		return nil, fmt.Errorf("loginfile: the attempt's tree: %w", err)
	}
	rel, err := filepath.Rel(filepath.Clean(s.Root), s.Home)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("loginfile: HOME %s: %w (%s)", s.Home, ErrOutsideTree, s.Root)
	}
	// Walk from the real root down to HOME's parent by directory descriptors, creating
	// missing directories 0700 and refusing symbolic links at every step.
	comps := strings.Split(rel, string(filepath.Separator))
	dir, err := openDir(-1, root)
	if err != nil {
		return nil, fmt.Errorf("loginfile: opening the attempt's tree: %w", err)
	}
	if dir, err = descendAll(dir, root, comps[:len(comps)-1], false); err != nil {
		return nil, err
	}
	defer func() { syscall.Close(dir) }()
	home := comps[len(comps)-1]
	if err := mkdirExcl(dir, home, s.Home); err != nil {
		return nil, err
	}
	seeded, err := writeBelow(dir, home, parts, s)
	if err != nil {
		// Leave nothing behind.
		_ = os.RemoveAll(s.Home)
		return nil, err
	}
	return seeded, nil
}

// splitPath checks a login file's relative path and returns its components.
func splitPath(p string) ([]string, string) {
	if p == "" || filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
		return nil, fmt.Sprintf("path %q must be a relative path below HOME", p)
	}
	parts := strings.Split(p, "/")
	if len(parts) > MaxPathDepth {
		return nil, fmt.Sprintf("path %q has more than %d components", p, MaxPathDepth)
	}
	for _, c := range parts {
		if c == "" || c == "." || c == ".." {
			return nil, fmt.Sprintf("path %q must not hold empty, \".\" or \"..\" components", p)
		}
	}
	return parts, ""
}

// openDir opens path (relative to dirfd, or absolute with dirfd -1) as a directory,
// refusing a symbolic link.
func openDir(dirfd int, path string) (int, error) {
	if dirfd < 0 {
		return syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	}
	return syscall.Openat(dirfd, path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
}

// descend opens component name of dirfd (display: its full path), creating it 0700
// when create is set and it is missing. A symbolic link is ErrSymlink, a non-directory
// an error.
func descend(dirfd int, name, display string, create bool) (int, error) {
	fd, err := openDir(dirfd, name)
	if errors.Is(err, syscall.ENOENT) && create {
		if err := syscall.Mkdirat(dirfd, name, 0o700); err != nil && !errors.Is(err, syscall.EEXIST) {
			return -1, fmt.Errorf("loginfile: creating %s: %w", display, err)
		}
		fd, err = openDir(dirfd, name)
	}
	if errors.Is(err, syscall.ENOTDIR) {
		// O_DIRECTORY|O_NOFOLLOW on a link reports ENOTDIR on some kernels.
		if fi, lerr := os.Lstat(display); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			err = syscall.ELOOP
		}
	}
	switch {
	case errors.Is(err, syscall.ELOOP):
		return -1, fmt.Errorf("loginfile: %s %w", display, ErrSymlink)
	case errors.Is(err, syscall.ENOTDIR):
		return -1, fmt.Errorf("loginfile: %s is not a directory", display)
	case err != nil:
		return -1, fmt.Errorf("loginfile: opening %s: %w", display, err)
	}
	return fd, nil
}

// descendAll descends from dirfd (whose path is at) through comps, creating missing
// directories 0700 (descend), and returns the last one's descriptor (dirfd itself for
// no components). With exact, each directory's mode is then set to 0700 whatever the
// umask. Every descriptor but the one returned is closed, dirfd included, also on an
// error.
func descendAll(dirfd int, at string, comps []string, exact bool) (int, error) {
	for _, c := range comps {
		at = filepath.Join(at, c)
		next, err := descend(dirfd, c, at, true)
		syscall.Close(dirfd)
		if err != nil {
			return -1, err
		}
		if exact {
			if err := syscall.Fchmod(next, 0o700); err != nil {
				syscall.Close(next)
				return -1, fmt.Errorf("loginfile: %s: %w", at, err)
			}
		}
		dirfd = next
	}
	return dirfd, nil
}

// mkdirExcl creates HOME (name in dirfd) with mode 0700; an existing entry is
// ErrSymlink when it is a link and ErrOccupied otherwise.
func mkdirExcl(dirfd int, name, display string) error {
	err := syscall.Mkdirat(dirfd, name, 0o700)
	if errors.Is(err, syscall.EEXIST) {
		if fi, err := os.Lstat(display); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("loginfile: HOME %s %w", display, ErrSymlink)
		}
		return fmt.Errorf("loginfile: HOME %s %w", display, ErrOccupied)
	}
	if err != nil {
		return fmt.Errorf("loginfile: creating HOME %s: %w", display, err)
	}
	return nil
}

// writeBelow creates the directories of parts below HOME (0700) and the file (0600,
// O_EXCL|O_NOFOLLOW), writes the value and returns its description.
func writeBelow(dirfd int, home string, parts []string, s Spec) (*Seeded, error) {
	fd, err := descend(dirfd, home, s.Home, false)
	if err != nil {
		return nil, err
	}
	if err := syscall.Fchmod(fd, 0o700); err != nil { // exact, whatever the umask
		syscall.Close(fd)
		return nil, fmt.Errorf("loginfile: HOME %s: %w", s.Home, err)
	}
	if fd, err = descendAll(fd, s.Home, parts[:len(parts)-1], true); err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	file := filepath.Join(s.Home, filepath.Join(parts...))
	ffd, err := syscall.Openat(fd, parts[len(parts)-1], syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	switch {
	case errors.Is(err, syscall.EEXIST):
		return nil, fmt.Errorf("loginfile: %s %w", file, ErrOccupied)
	case err != nil:
		return nil, fmt.Errorf("loginfile: creating %s: %w", file, err)
	}
	f := os.NewFile(uintptr(ffd), file)
	defer f.Close()
	if err := f.Chmod(0o600); err != nil {
		return nil, fmt.Errorf("loginfile: %s: %w", file, err)
	}
	if _, err := f.Write(s.Value); err != nil {
		return nil, fmt.Errorf("loginfile: writing %s: %w", file, err)
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("loginfile: writing %s: %w", file, err)
	}
	return &Seeded{Home: s.Home, File: file, Bytes: len(s.Value)}, nil
}

// Teardown is what Destroy did: the HOME, whether the login file was overwritten with
// zeros before removal (false when it was gone or replaced by something else), and
// whether the HOME is confirmed gone (Confirmed).
type Teardown struct {
	Home        string `json:"home"`
	Overwritten bool   `json:"overwritten"`
	Confirmed   bool   `json:"confirmed"`
}

// Destroy overwrites the login file with zeros (when it is still a regular file:
// opened O_NOFOLLOW, so a link the agent put in its place is not followed), removes the
// HOME with everything the agent left in it (links are removed, never followed), and
// confirms that the HOME no longer exists. Errors: the removal failed or the HOME still
// exists afterwards (Confirmed false).
func (s *Seeded) Destroy() (Teardown, error) {
	td := Teardown{Home: s.Home}
	if f, err := os.OpenFile(s.File, os.O_WRONLY|syscall.O_NOFOLLOW, 0); err == nil {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			zeros := make([]byte, max(st.Size(), int64(s.Bytes)))
			if _, err := f.WriteAt(zeros, 0); err == nil && f.Sync() == nil {
				td.Overwritten = true
			}
		}
		f.Close()
	}
	rmErr := os.RemoveAll(s.Home)
	if _, err := os.Lstat(s.Home); errors.Is(err, os.ErrNotExist) {
		td.Confirmed = true
	}
	if !td.Confirmed {
		if rmErr == nil {
			rmErr = errors.New("it still exists")
		}
		return td, fmt.Errorf("loginfile: destroying HOME %s: %w", s.Home, rmErr)
	}
	return td, nil
}
