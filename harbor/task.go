package harbor

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// The files of a task directory, relative to it.
const (
	InstructionFile = "instruction.md"
	DockerfileFile  = "environment/Dockerfile"
	TestFile        = "tests/test.sh"
	SolutionFile    = "solution/solve.sh"
)

// unsupportedFiles are files whose presence asks for something agentproof does not do:
// a compose environment (several services) or a separate verifier environment.
var unsupportedFiles = map[string]string{
	"environment/docker-compose.yaml": "a compose environment (several services) is not supported: the task's environment is the one image of environment/Dockerfile",
	"environment/docker-compose.yml":  "a compose environment (several services) is not supported: the task's environment is the one image of environment/Dockerfile",
	"tests/docker-compose.yaml":       "a separate verifier environment is not supported: the verifier runs in the task's image, after the agent",
	"tests/Dockerfile":                "a separate verifier environment is not supported: the verifier runs in the task's image, after the agent",
	"steps":                           "multi-step tasks are not supported",
}

// Bounds of a task directory's files: the instruction at most 256 KiB, every other
// read file at most 1 MiB.
const (
	maxInstruction = 256 << 10
	maxFile        = 1 << 20
)

// Task is one Harbor task directory as agentproof imports it.
//
//   - Name: [task] name of task.toml, else the directory's base name.
//   - ID: Name as a catalog id (lower-case letters, digits and '-', at most 64).
//   - Config: task.toml (see Config).
//   - Instruction: instruction.md, the agent's prompt (UTF-8, not empty).
//   - Dockerfile: environment/Dockerfile, the image the agent and the verifier run in.
//   - HasSolution: solution/solve.sh exists (the reference agent runs it).
//   - Solution: solution/solve.sh's text ("" without one).
type Task struct {
	Name        string
	ID          string
	Config      Config
	Instruction string
	Dockerfile  string
	HasSolution bool
	Solution    string
}

// LoadTask reads the task directory fsys (named dir in problems). Errors: *Problems
// listing every file and field that is missing or not supported; an I/O error reading
// the directory is returned as such.
func LoadTask(fsys fs.FS, dir string) (*Task, error) {
	t := &Task{}
	var problems []Problem
	add := func(file, format string, args ...any) {
		problems = append(problems, Problem{File: file, Message: fmt.Sprintf(format, args...)})
	}
	data, err := readBounded(fsys, ConfigFile, maxConfig+1)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		add(ConfigFile, "is missing: every Harbor task has one")
	case err != nil:
		return nil, fmt.Errorf("%s/%s: %w", dir, ConfigFile, err)
	default:
		var ps []Problem
		t.Config, ps = ParseConfig(data)
		problems = append(problems, ps...)
	}
	for _, f := range []struct {
		name string
		into *string
		max  int
	}{{InstructionFile, &t.Instruction, maxInstruction}, {DockerfileFile, &t.Dockerfile, maxFile}, {TestFile, nil, maxFile}} {
		b, err := readBounded(fsys, f.name, int64(f.max)+1)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			add(f.name, "is missing: every Harbor task has one")
		case err != nil:
			return nil, fmt.Errorf("%s/%s: %w", dir, f.name, err)
		case len(b) > f.max:
			add(f.name, "is more than %d bytes", f.max)
		case !utf8.Valid(b) || strings.TrimSpace(string(b)) == "":
			add(f.name, "must be UTF-8 text and not empty")
		case f.into != nil:
			*f.into = string(b)
		}
	}
	if b, err := readBounded(fsys, SolutionFile, maxFile+1); err == nil {
		t.HasSolution = true
		if len(b) > maxFile || !utf8.Valid(b) {
			add(SolutionFile, "must be UTF-8 text of at most %d bytes", maxFile)
		}
		t.Solution = string(b)
	} else if errors.Is(err, fs.ErrInvalid) {
		add(SolutionFile, "must be a regular file")
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s/%s: %w", dir, SolutionFile, err)
	}
	for _, name := range slices.Sorted(maps.Keys(unsupportedFiles)) {
		if _, err := fs.Stat(fsys, name); err == nil {
			add(name, "%s", unsupportedFiles[name])
		}
	}
	t.Name = t.Config.Name
	if t.Name == "" {
		t.Name = path.Base(strings.TrimRight(strings.ReplaceAll(dir, string(os.PathSeparator), "/"), "/"))
	}
	if t.ID = CaseID(t.Name); t.ID == "" {
		add(ConfigFile, "task name %q gives no case id (it needs a letter or digit)", t.Name)
	}
	if len(problems) > 0 {
		return nil, &Problems{Dir: dir, List: problems}
	}
	return t, nil
}

var idUnsafe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-z0-9]+`) })

// CaseID is a task name as a catalog id: lower-case, every run of other characters
// (an organisation's "/" included) one '-', no '-' at either end, at most 64
// characters; "" when nothing is left.
func CaseID(name string) string {
	id := strings.Trim(idUnsafe().ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(id) > 64 {
		id = strings.TrimRight(id[:64], "-")
	}
	return id
}

// readBounded reads at most limit bytes of name in fsys; a directory or a file that is
// not regular is fs.ErrInvalid.
func readBounded(fsys fs.FS, name string, limit int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file: %w", fs.ErrInvalid)
	}
	return io.ReadAll(io.LimitReader(f, limit))
}
