package worker

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/agentproof/agentproof/atomicfile"
	"github.com/agentproof/agentproof/canonjson"
	"github.com/agentproof/agentproof/evidence"
	"github.com/agentproof/agentproof/signame"
)

// Execution manifest of the guarded path.
//
// The Go fixture program is the agentproof binary itself, so the manifest hashes "the
// fixture program as executed": the executable the worker spawns (path
// ManifestExecutablePath) plus the Go sources of the worker package and of every package
// of this module it imports (evidence, canonjson, atomicfile, signame), embedded at build time. Any change to
// a compiled file changes the executable's bytes; the source entries name what changed.

const (
	// GuardedFixtureProtocol is the execution manifest's protocol tag.
	GuardedFixtureProtocol = "sf-guarded-fixture/1"
	// GuardedFixtureCollector is the collector tag of the guarded path: the second
	// version of the local fixture worker's collector, /1 being run().
	GuardedFixtureCollector = "sf-local-fixture-worker/2"
	// ManifestExecutablePath is the manifest path of the executable's entry.
	ManifestExecutablePath = "bin/agentproof"
)

//go:embed *.go
var workerSources embed.FS

// manifestPackages are the embedded source trees the manifest lists, by directory: the
// worker and the module packages it imports, transitively (checked by
// TestManifestClosure).
var manifestPackages = []struct {
	dir string
	fs  embed.FS
}{
	{"atomicfile", atomicfile.Sources},
	{"canonjson", canonjson.Sources},
	{"evidence", evidence.Sources},
	{"signame", signame.Sources},
	{"worker", workerSources},
}

// ManifestFile is one hashed file: Path ("bin/agentproof" or "<package>/<file>.go") and
// SHA256 ("sha256:" plus 64 lower-case hexadecimal characters).
type ManifestFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// ExecutionManifest pins the guarded fixture program:
// Protocol is GuardedFixtureProtocol, Collector is GuardedFixtureCollector, Files are
// sorted by Path without duplicates, and Digest is "sha256:" plus the hex SHA-256 of the
// canonical JSON of [protocol, collector, [[path, sha256]…]], so that a change to any
// listed file changes it.
type ExecutionManifest struct {
	Protocol  string         `json:"protocol"`
	Collector string         `json:"collector"`
	Files     []ManifestFile `json:"files"`
	Digest    string         `json:"digest"`
}

// exeStamp is what the launch window compares to prove the executable is the file that
// was hashed: identity, size and modification and change times.
type exeStamp struct {
	id           fileID
	size         int64
	mtime, ctime syscall.Timespec
}

func stampOf(fi os.FileInfo) (exeStamp, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return exeStamp{}, false
	}
	id, _ := statID(fi)
	return exeStamp{id: id, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}, true
}

// checkExecutableUnchanged returns nil when program is still the file stamp describes.
// It does one stat(2): it is safe in the launch window.
func checkExecutableUnchanged(program string, stamp exeStamp) error {
	fi, err := os.Stat(program)
	if err != nil {
		return fmt.Errorf("executable: %w", err)
	}
	if got, ok := stampOf(fi); !ok || got != stamp {
		return fmt.Errorf("the executable %s changed after it was hashed", program)
	}
	return nil
}

// GuardedFixtureManifest returns the manifest of the running agentproof binary as the
// worker would execute it (os.Executable()). It
// returns an error when the executable cannot be located or read.
func GuardedFixtureManifest() (ExecutionManifest, error) {
	exe, err := os.Executable()
	if err != nil {
		return ExecutionManifest{}, fmt.Errorf("locating the agentproof executable: %w", err)
	}
	return ExecutionManifestFor(exe)
}

// ExecutionManifestFor returns the manifest for program (an absolute path of the
// agentproof executable a Worker runs, see Options.Program), hashing it as it is now. It
// returns an error when program cannot be read or changes while it is hashed.
func ExecutionManifestFor(program string) (ExecutionManifest, error) {
	m, _, err := manifestFor(program)
	return m, err
}

func manifestFor(program string) (ExecutionManifest, exeStamp, error) {
	exeHash, stamp, err := hashExecutable(program)
	if err != nil {
		return ExecutionManifest{}, exeStamp{}, err
	}
	files := []ManifestFile{{Path: ManifestExecutablePath, SHA256: exeHash}}
	for _, pkg := range manifestPackages {
		err := fs.WalkDir(pkg.fs, ".", func(name string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(name, "_test.go") {
				return err
			}
			data, err := pkg.fs.ReadFile(name)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			files = append(files, ManifestFile{Path: pkg.dir + "/" + name, SHA256: "sha256:" + hex.EncodeToString(sum[:])})
			return nil
		})
		if err != nil {
			return ExecutionManifest{}, exeStamp{}, fmt.Errorf("embedded sources of %s: %w", pkg.dir, err)
		}
	}
	slices.SortFunc(files, func(a, b ManifestFile) int { return strings.Compare(a.Path, b.Path) })
	m := ExecutionManifest{Protocol: GuardedFixtureProtocol, Collector: GuardedFixtureCollector, Files: files}
	m.Digest = manifestDigest(m.Protocol, m.Collector, files)
	return m, stamp, nil
}

// hashExecutable hashes program through one open descriptor and returns the hash and the
// file's stamp; it fails when the file changed while it was read.
func hashExecutable(program string) (string, exeStamp, error) {
	f, err := os.Open(program)
	if err != nil {
		return "", exeStamp{}, fmt.Errorf("reading executable: %w", err)
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return "", exeStamp{}, fmt.Errorf("reading executable: %w", err)
	}
	if !before.Mode().IsRegular() {
		return "", exeStamp{}, fmt.Errorf("executable %s is not a regular file", program)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", exeStamp{}, fmt.Errorf("reading executable: %w", err)
	}
	after, err := f.Stat()
	if err != nil {
		return "", exeStamp{}, fmt.Errorf("reading executable: %w", err)
	}
	s1, ok1 := stampOf(before)
	s2, ok2 := stampOf(after)
	if !ok1 || !ok2 || s1 != s2 {
		return "", exeStamp{}, fmt.Errorf("executable %s changed while it was hashed", program)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), s1, nil
}

// manifestDigest is the manifest's digest: SHA-256 of canonical JSON of
// [protocol, collector, [[path, sha256]…]].
func manifestDigest(protocol, collector string, files []ManifestFile) string {
	pairs := make([][2]string, len(files))
	for i, f := range files {
		pairs[i] = [2]string{f.Path, f.SHA256}
	}
	raw, err := canonjson.Sorted([]any{protocol, collector, pairs})
	if err != nil { // strings only: always encodes
		panic(fmt.Sprintf("worker: encoding manifest digest input: %v", err))
	}
	return "sha256:" + canonjson.SHA256Hex(raw)
}

var (
	sha256Pattern       = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sha256:[0-9a-f]{64}$`) })
	manifestPathPattern = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}/[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	})
)

// ManifestError lists every problem of a manifest that ParseExecutionManifest rejects.
type ManifestError struct{ Problems []string }

func (e *ManifestError) Error() string {
	return "invalid execution manifest: " + strings.Join(e.Problems, "; ")
}

// ParseExecutionManifest parses and validates a manifest's JSON exactly: exactly the four fields, the protocol and collector tags, at
// least one file, paths of the form <dir>/<name> sorted without duplicates, sha256
// values "sha256:"+64 hex, and a digest equal to the one recomputed from them. It says
// nothing about the current files (compare Digest with ExecutionManifestFor's). Input is
// untrusted: it returns a *ManifestError, never panics.
func ParseExecutionManifest(data []byte) (ExecutionManifest, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var raw struct {
		Protocol  *string         `json:"protocol"`
		Collector *string         `json:"collector"`
		Files     *[]ManifestFile `json:"files"`
		Digest    *string         `json:"digest"`
	}
	if err := dec.Decode(&raw); err != nil {
		return ExecutionManifest{}, &ManifestError{Problems: []string{fmt.Sprintf("not a manifest object: %v", err)}}
	}
	if dec.More() {
		return ExecutionManifest{}, &ManifestError{Problems: []string{"trailing data after the manifest"}}
	}
	if _, err := dec.Token(); err != io.EOF {
		return ExecutionManifest{}, &ManifestError{Problems: []string{"trailing data after the manifest"}}
	}
	var p []string
	if raw.Protocol == nil || *raw.Protocol != GuardedFixtureProtocol {
		p = append(p, fmt.Sprintf("protocol must be %q", GuardedFixtureProtocol))
	}
	if raw.Collector == nil || *raw.Collector != GuardedFixtureCollector {
		p = append(p, fmt.Sprintf("collector must be %q", GuardedFixtureCollector))
	}
	var files []ManifestFile
	if raw.Files == nil || len(*raw.Files) == 0 {
		p = append(p, "files must list at least one file")
	} else {
		files = *raw.Files
		for i, f := range files {
			if !manifestPathPattern().MatchString(f.Path) {
				p = append(p, fmt.Sprintf("files[%d].path %q must be <dir>/<name>", i, clipText(f.Path, 64)))
			}
			if !sha256Pattern().MatchString(f.SHA256) {
				p = append(p, fmt.Sprintf("files[%d].sha256 must be sha256: and 64 lower-case hex characters", i))
			}
			if i > 0 && files[i-1].Path >= f.Path {
				p = append(p, fmt.Sprintf("files[%d].path %q is not after %q (sorted, unique)", i, clipText(f.Path, 64), clipText(files[i-1].Path, 64)))
			}
		}
	}
	if raw.Digest == nil || !sha256Pattern().MatchString(*raw.Digest) {
		p = append(p, "digest must be sha256: and 64 lower-case hex characters")
	}
	if len(p) == 0 {
		if want := manifestDigest(*raw.Protocol, *raw.Collector, files); *raw.Digest != want {
			p = append(p, fmt.Sprintf("digest %s does not match the files (recomputed %s)", *raw.Digest, want))
		}
	}
	if len(p) > 0 {
		return ExecutionManifest{}, &ManifestError{Problems: p}
	}
	return ExecutionManifest{Protocol: *raw.Protocol, Collector: *raw.Collector, Files: slices.Clone(files), Digest: *raw.Digest}, nil
}
