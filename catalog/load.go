package catalog

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"go.yaml.in/yaml/v3"
)

// Limits on what Load reads, so that a huge or hostile catalog is a clear problem and
// not unbounded memory: one file at most MaxFileBytes, all files together at most
// MaxTotalBytes, at most MaxFiles files.
const (
	MaxFileBytes  = 4 << 20
	MaxTotalBytes = 32 << 20
	MaxFiles      = 1000
)

//go:embed default/*.yaml default/files
var defaultFiles embed.FS

// DefaultFS returns the embedded default catalog's files (catalog/default/*.yaml) as a
// file system whose root holds the YAML files.
func DefaultFS() fs.FS {
	sub, err := fs.Sub(defaultFiles, "default")
	if err != nil {
		panic(err) // the embed pattern guarantees the directory
	}
	return sub
}

// Default loads and validates the embedded default catalog, the one every command uses
// when --catalog is not given. Problems are reported as for Load, with file names
// "catalog/default/<file>.yaml" (their path in the repository).
func Default(opts ...Option) (*Catalog, error) {
	return loadSources([]source{defaultSource()}, buildOptions(opts))
}

// LoadDir loads and validates the catalog in directory dir (every *.yaml file below it,
// in path order; a *.yml file there is a problem naming it), or the single file dir
// names. Problems name files as dir joined with
// their relative path. It returns a *ValidationError listing every problem, or a
// wrapped error when a file cannot be read.
func LoadDir(dir string, opts ...Option) (*Catalog, error) {
	return LoadSources(Sources{Paths: []string{dir}}, opts...)
}

// Sources names the parts of one merged catalog: Default adds the embedded default
// catalog (read first, its files named "catalog/default/<file>.yaml"); Paths are catalog
// directories (every *.yaml file below each, in path order) or single YAML files, read
// in the order given, each named as in LoadDir. The parts are one catalog: a suite of
// one part may name the profiles, environments, cases, groups and credentials of
// another, and an id declared in two parts is a duplicate (the problem names both
// files). A file that two paths include (overlapping directories) is a problem too.
type Sources struct {
	Default bool
	Paths   []string
}

// LoadSources loads and validates the merged catalog of s (see Sources). Errors: a
// *ValidationError listing every problem (no part at all is one), an error wrapping
// fs.ErrNotExist naming a path that does not exist, or a wrapped error when a file
// cannot be read.
func LoadSources(s Sources, opts ...Option) (*Catalog, error) {
	var srcs []source
	if s.Default {
		srcs = append(srcs, defaultSource())
	}
	for _, dir := range s.Paths {
		src, err := pathSource(dir)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, src)
	}
	if len(srcs) == 0 {
		ps := &problems{limit: maxProblems}
		ps.add(Pos{}, "no catalog: name a catalog directory or file, or the embedded default catalog")
		return nil, ps.err()
	}
	return loadSources(srcs, buildOptions(opts))
}

// source is one part of a catalog: its files and how problems name them.
type source struct {
	fsys   fs.FS
	prefix string // joined before each file's relative path in problems ("" for a single file)
	// osRoot is the absolute OS path of the directory (or file) the part reads, for
	// noticing a file two parts include; "" for the embedded default catalog.
	osRoot string
	// bad is a problem of the path itself (not a regular file); the part has no files.
	bad string
	// breadth adds the declarations generated from the embedded model-breadth
	// snapshot (the default catalog's; see addBreadth).
	breadth bool
}

// defaultSource names the embedded files by their repository path, catalog/default/<file>.yaml,
// so that a problem or a known failure's source is a file a reader of the repository can open.
func defaultSource() source {
	return source{fsys: DefaultFS(), prefix: "catalog/default", breadth: true}
}

// pathSource is the part of a catalog path: a directory or one file.
func pathSource(dir string) (source, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return source{}, fmt.Errorf("catalog: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return source{}, fmt.Errorf("catalog: %w", err)
	}
	if !fi.IsDir() {
		if !fi.Mode().IsRegular() {
			return source{prefix: dir, bad: notRegular(fi.Mode())}, nil
		}
		return source{fsys: fileFS{dir}, osRoot: abs}, nil
	}
	return source{fsys: osDirFS{FS: os.DirFS(dir), dir: dir}, prefix: dir, osRoot: abs}, nil
}

// names lists the part's *.yaml files (relative slash paths, sorted; the one file's own
// path for a single-file part) and, apart, its *.yml files, which a catalog directory
// never reads (they are a problem: see loadSources).
func (s source) names() (names, yml []string, err error) {
	if ff, ok := s.fsys.(fileFS); ok {
		return []string{ff.name}, nil, nil
	}
	err = fs.WalkDir(s.fsys, ".", func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case de.IsDir() && de.Name() == FilesDir:
			return fs.SkipDir // workspace sources and verifier files, never catalog files
		case de.IsDir():
		case strings.HasSuffix(p, ".yaml"):
			names = append(names, p)
		case strings.HasSuffix(p, ".yml"):
			yml = append(yml, p)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("catalog: listing files: %w", err)
	}
	slices.Sort(names)
	slices.Sort(yml)
	return names, yml, nil
}

// osPath is the absolute OS path of the part's file name ("" for embedded files).
func (s source) osPath(name string) string {
	switch {
	case s.osRoot == "":
		return ""
	case s.prefix == "":
		return s.osRoot
	}
	return filepath.Join(s.osRoot, filepath.FromSlash(name))
}

// osDirFS is os.DirFS(dir) whose catalog files readBounded opens itself, with
// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
type osDirFS struct {
	fs.FS
	dir string
}

// ReadDir lists a directory (fs.ReadDirFS, for fs.WalkDir).
func (d osDirFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(d.FS, name) }

// Stat describes a file, following symbolic links (fs.StatFS).
func (d osDirFS) Stat(name string) (fs.FileInfo, error) { return fs.Stat(d.FS, name) }

// notRegular is the problem of a catalog path that is not a regular file: a named
// pipe, a device or a socket is never opened for reading (a FIFO would block).
func notRegular(m fs.FileMode) string {
	return "is " + fileKind(m) + ", not a regular file; catalog files must be regular files (it was not read)"
}

// fileKind names the kind of a file that is not regular: "a named pipe (FIFO)", "a
// socket", "a character device", "a device", "a directory" or "an irregular file".
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "an irregular file"
}

// notRegularError is readBounded's error for a path that is not a regular file.
type notRegularError struct{ mode fs.FileMode }

func (e *notRegularError) Error() string { return notRegular(e.mode) }

// fileFS is a file system holding exactly one file, named by its own path.
type fileFS struct{ name string }

// Open opens the one file, whatever name asks for it (fs.WalkDir is not used on it).
func (f fileFS) Open(name string) (fs.File, error) {
	if name == "." {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.ErrUnsupported}
	}
	return os.Open(f.name)
}

// Load loads and validates the catalog in fsys: every file whose name ends in ".yaml",
// at any depth, in path order (a file ending in ".yml" is a problem naming it: it would
// otherwise be silently ignored); each file may hold several YAML documents. Top-level keys
// are groups, credentials, profiles, environments, cases, suites, rankings and
// knownFailures, each a
// sequence; a catalog may split them across files freely. It returns the catalog with
// its matrix and suite fingerprints, or a *ValidationError listing every problem
// (docs/harness.md, "Catalog validation"), or a wrapped error when the file system fails.
func Load(fsys fs.FS, opts ...Option) (*Catalog, error) {
	return loadSources([]source{{fsys: fsys}}, buildOptions(opts))
}

// document is one YAML document of a catalog file.
type document struct {
	Groups       []*Group       `yaml:"groups"`
	Credentials  []*Credential  `yaml:"credentials"`
	Profiles     []*Profile     `yaml:"profiles"`
	Environments []*Environment `yaml:"environments"`
	Cases        []*Case        `yaml:"cases"`
	Suites       []*Suite       `yaml:"suites"`
	Rankings     []*Ranking     `yaml:"rankings"`
	// KnownFailures is the baseline of known failures.
	KnownFailures []*KnownFailure `yaml:"knownFailures"`
}

// loadSources reads every file of every part (bounded: MaxFiles, MaxFileBytes,
// MaxTotalBytes over all parts), parses them and validates the merged catalog.
func loadSources(srcs []source, o loadOptions) (*Catalog, error) {
	ps := &problems{limit: maxProblems}
	c := &Catalog{}
	files, err := readSources(srcs, ps)
	if err != nil {
		return nil, err
	}
	c.origins = make(map[string]origin, len(files))
	for _, f := range files {
		c.origins[f.display] = f.origin
	}
	if len(ps.list) > 0 && len(files) == 0 {
		return nil, ps.err()
	}
	// A catalog whose files all parsed (perhaps with problems of their structure: an
	// unknown key, a value of the wrong type) is still validated, so that one run
	// reports every file's problems; see validateDespite.
	unread := len(ps.list) > 0
	malformed, withProblems := mergeParsed(c, ps, files, parseFiles(files))
	if slices.ContainsFunc(srcs, func(s source) bool { return s.breadth }) {
		addBreadth(c, ps)
	}
	switch {
	case len(ps.list) == 0:
		validate(c, ps, o)
	case !unread && !malformed:
		validateDespite(c, ps, o, withProblems)
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	// The position tables and raw nodes serve validation only (problems name a
	// file:line:column); a loaded catalog lives as long as its campaign, so they go.
	c.pos, c.raw, c.origins = nil, nil, nil
	return c, nil
}

// catalogFile is one catalog file read: its display name (the part's prefix joined
// with its path) and its bytes.
type catalogFile struct {
	display string
	data    []byte
	origin  origin // where it was read from (workspace sources resolve relative to it)
}

// readSources reads the *.yaml files of every part in order. A bad part, a *.yml
// file, a part with no *.yaml file, a file included twice (overlapping parts), a file
// over MaxFileBytes or not regular is a problem in ps and is skipped; reading stops at
// the file that takes the total over MaxTotalBytes. The error is ps's when the parts
// have more than MaxFiles files, or a listing or read error.
func readSources(srcs []source, ps *problems) ([]catalogFile, error) {
	var files []catalogFile
	total, count := 0, 0
	included := map[string]string{} // OS path → display name of the file that included it
	for _, src := range srcs {
		if src.bad != "" {
			ps.add(Pos{File: src.prefix}, "%s", src.bad)
			continue
		}
		names, yml, err := src.names()
		if err != nil {
			return nil, err
		}
		for _, name := range yml {
			display := path.Join(filepath.ToSlash(src.prefix), name)
			ps.add(Pos{File: display}, "catalog directories read only *.yaml files, so this *.yml file was not read: rename it to %s, or move it out of the catalog directory",
				path.Base(strings.TrimSuffix(name, ".yml")+".yaml"))
		}
		if len(names) == 0 {
			ps.add(Pos{}, "catalog %s has no *.yaml files", displayRoot(src.prefix))
			continue
		}
		if count += len(names); count > MaxFiles {
			ps.add(Pos{}, "catalog %s has %d *.yaml files; the limit is %d", displayRoot(src.prefix), count, MaxFiles)
			return nil, ps.err()
		}
		for _, name := range names {
			display := name
			if src.prefix != "" {
				display = path.Join(filepath.ToSlash(src.prefix), name)
			}
			if p := src.osPath(name); p != "" {
				if first, ok := included[p]; ok {
					ps.add(Pos{File: display}, "is the same file as %s: two catalog paths include it (they overlap); name each file once", first)
					continue
				}
				included[p] = display
			}
			data, err := readBounded(src.fsys, name)
			if errors.Is(err, errTooBig) {
				ps.add(Pos{File: display}, "file is larger than %d bytes (%d MiB), the per-file limit; split the catalog into smaller files", MaxFileBytes, MaxFileBytes>>20)
				continue
			}
			var nr *notRegularError
			if errors.As(err, &nr) {
				ps.add(Pos{File: display}, "%s", nr.Error())
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("catalog: reading %s: %w", display, err)
			}
			total += len(data)
			if total > MaxTotalBytes {
				ps.add(Pos{File: display}, "catalog files add up to more than %d bytes (%d MiB), the total limit", MaxTotalBytes, MaxTotalBytes>>20)
				return files, nil
			}
			files = append(files, catalogFile{display, data, origin{fsys: src.fsys, name: name, osPath: src.osPath(name)}})
		}
	}
	return files, nil
}

// parseFiles parses files concurrently (each into its own position tables and
// problem list, at most GOMAXPROCS at a time); result i is file i's, so merging them
// in order does not depend on scheduling.
func parseFiles(files []catalogFile) []*parsed {
	results := make([]*parsed, len(files))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i] = parseFile(f.display, f.data)
		}()
	}
	wg.Wait()
	return results
}

// mergeParsed appends the parsed files' documents, position tables and raw nodes to
// c and their problems to ps, in file order. It reports whether any file was
// malformed and the display names of the files that had problems.
func mergeParsed(c *Catalog, ps *problems, files []catalogFile, results []*parsed) (malformed bool, withProblems map[string]bool) {
	withProblems = map[string]bool{}
	for i, r := range results {
		malformed = malformed || r.malformed
		if len(r.ps.list) > 0 || r.ps.dropped > 0 {
			withProblems[files[i].display] = true
		}
		for _, p := range r.ps.list {
			ps.add(p.Pos, "%s", p.Message)
		}
		ps.dropped += r.ps.dropped
		c.pos = append(c.pos, r.pos)
		c.raw = append(c.raw, r.raw)
		for _, doc := range r.docs {
			c.Groups = append(c.Groups, doc.Groups...)
			c.Credentials = append(c.Credentials, doc.Credentials...)
			c.Profiles = append(c.Profiles, doc.Profiles...)
			c.Environments = append(c.Environments, doc.Environments...)
			c.Cases = append(c.Cases, doc.Cases...)
			c.Suites = append(c.Suites, doc.Suites...)
			c.Rankings = append(c.Rankings, doc.Rankings...)
			c.KnownFailures = append(c.KnownFailures, doc.KnownFailures...)
		}
	}
	return malformed, withProblems
}

// validateDespite validates a catalog whose files all parsed as YAML but some of
// whose structure had problems (the files in withProblems; their problems are in ps
// already), adding the problems of every other file and of the catalog as a whole:
// the problems validation finds inside a file with structure problems are left out,
// as they mostly repeat them ("driver is required" after an unknown key "drivr").
// A catalog with malformed YAML, an unread file or too many problems is not validated
// at all: what is missing from it would make references look unknown.
func validateDespite(c *Catalog, ps *problems, o loadOptions, withProblems map[string]bool) {
	vs := &problems{limit: maxProblems}
	validate(c, vs, o)
	for _, p := range vs.list {
		if !withProblems[p.File] {
			ps.add(p.Pos, "%s", p.Message)
		}
	}
	ps.dropped += vs.dropped
}

func displayRoot(prefix string) string {
	if prefix == "" {
		return "(root)"
	}
	return prefix
}

var errTooBig = errors.New("file too big")

// readBounded reads at most MaxFileBytes of name; a longer file is errTooBig, whatever
// its Stat says. A name that is not a regular file (symbolic links followed) is a
// *notRegularError and is never read: files of an osDirFS or fileFS are opened with
// O_NONBLOCK and checked again on the open descriptor, so a FIFO swapped in after the
// first check cannot block either.
func readBounded(fsys fs.FS, name string) ([]byte, error) {
	// Checked before opening, so that not even a device is opened.
	var fi fs.FileInfo
	var err error
	if ff, ok := fsys.(fileFS); ok {
		fi, err = os.Stat(ff.name)
	} else {
		fi, err = fs.Stat(fsys, name)
	}
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &notRegularError{fi.Mode()}
	}
	var f fs.File
	switch d := fsys.(type) {
	case fileFS:
		f, err = os.OpenFile(d.name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	case osDirFS:
		f, err = os.OpenFile(filepath.Join(d.dir, filepath.FromSlash(name)), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	default:
		f, err = fsys.Open(name)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &notRegularError{fi.Mode()}
	}
	if fi.Size() > MaxFileBytes {
		return nil, errTooBig
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, errTooBig
	}
	return data, nil
}

var yamlLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

// parsed is one file's decoded documents with their position tables and problems.
type parsed struct {
	docs []*document
	pos  map[any]Pos
	raw  map[any]*yaml.Node
	ps   *problems
	// malformed: the file is not valid YAML (or hit a decoding limit), so some of its
	// declarations are missing.
	malformed bool
}

// parseFile decodes every YAML document of one file.
func parseFile(file string, data []byte) *parsed {
	// About one recorded position per 12 bytes of YAML; sizing the map up front avoids
	// rehashing it while decoding.
	r := &parsed{pos: make(map[any]Pos, len(data)/12), raw: map[any]*yaml.Node{}, ps: &problems{limit: maxProblems}}
	d := &decoder{file: file, ps: r.ps, pos: r.pos, raw: r.raw}
	if docs, ok := cachedDocs(data); ok { // the embedded default catalog, parsed already
		for _, root := range docs {
			if !r.add(d, root) {
				break
			}
		}
		return r
	}
	err := eachDoc(data, func(root *yaml.Node) bool { return r.add(d, root) })
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		p := Pos{File: file}
		if m := yamlLineRE().FindStringSubmatch(err.Error()); m != nil {
			p.Line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		if line := syntaxErrorLine(data, err); line > 0 {
			p.Line = line // the offending line, not the parser's context mark
		}
		r.ps.add(p, "malformed YAML: %s", msg)
		r.malformed = true
	}
	return r
}

// add decodes one parsed YAML document (root, from yaml.Decoder.Decode) of r's file
// with d; false when its problems are too many to go on with the file (malformed).
func (r *parsed) add(d *decoder, root *yaml.Node) bool {
	n := root
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return true
		}
		n = n.Content[0]
	}
	if isNull(n) {
		return true
	}
	scanRawSecrets(d.file, n, r.ps)
	doc := &document{}
	d.decode(n, reflectValue(doc))
	if d.over {
		r.malformed = true
		return false
	}
	r.docs = append(r.docs, doc)
	return true
}

// eachDoc decodes the YAML documents of data in order and calls doc with each, until
// doc returns false or the documents end. Errors: the first document that does not
// decode (decodeDoc's error); nil otherwise.
func eachDoc(data []byte, doc func(root *yaml.Node) bool) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var root yaml.Node
		err := decodeDoc(dec, &root)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if !doc(&root) {
			return nil
		}
	}
}

// decodeDoc reads one document, turning a parser panic into an error: the loader's
// input is untrusted and a crash must not take the process down.
func decodeDoc(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: parser failed: %v", r)
		}
	}()
	return dec.Decode(n)
}
