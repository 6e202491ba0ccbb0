package worker

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"

	"github.com/agentproof/agentproof/canonjson"
)

// The Attempt fence, kept with flock(2) (docs/fixture-worker.md).
//
// A fence lives in a dedicated fence directory that holds only two files:
//
//   - <fence>: the fence file. Its content is the fence's label, the canonical JSON of
//     its FenceIdentity, written once by ProvisionFence. An exclusive flock on it is the
//     *execution* lock: the gate in a guarded fixture child takes it before any fixture
//     code runs and keeps it until the process ends (so "the running child holds the
//     fence itself"). A second execution under the same fence is refused by the gate.
//   - <fence>-journal: the controller's hold file. An exclusive flock on it is the
//     *controller hold* (Hold): the proof that one controller owns the attempt. It is
//     never passed to the child (O_CLOEXEC).
//
// The locks are advisory flock locks on open file descriptions: they end when their
// holder closes the descriptor or exits, and nothing else can take them meanwhile. A
// held or closed fence proves exclusion, not that a process exited.

// FenceIdentity names one Attempt fence.
//
//   - RunID: 1–128 characters of [A-Za-z0-9._:/+-], starting with a letter or digit.
//   - Epoch: ≥ 0.
//   - AttemptID: exactly "<RunID>/<Epoch>".
//   - Worker: 1–64 characters of [A-Za-z0-9._-], starting with a letter or digit.
//   - Nonce: 32 lower-case hexadecimal characters (16 random bytes, NewFenceIdentity).
//   - Path: absolute, clean path of the fence file; its directory is the dedicated fence
//     directory; its base name is 1–64 characters of [A-Za-z0-9._-] starting with a
//     letter or digit and not ending in "-journal".
type FenceIdentity struct {
	RunID     string `json:"runId"`
	Epoch     int64  `json:"epoch"`
	AttemptID string `json:"attemptId"`
	Worker    string `json:"worker"`
	Nonce     string `json:"nonce"`
	Path      string `json:"path"`
}

// JournalSuffix is appended to the fence file's name to name the controller's hold file.
const JournalSuffix = "-journal"

// FenceError lists every problem of an invalid fence identity, a fence directory or a
// fence label.
type FenceError struct{ Problems []string }

func (e *FenceError) Error() string { return "invalid fence: " + strings.Join(e.Problems, "; ") }

// ErrFenceHeld is returned (wrapped) by Hold when another controller holds the fence.
var ErrFenceHeld = errors.New("fence held by another controller")

var (
	runIDPattern     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/+-]{0,127}$`) })
	workerPattern    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })
	noncePattern     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{32}$`) })
	fenceNamePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })
)

// ParseFenceIdentity validates id and returns a copy, or a *FenceError listing every
// problem.
func ParseFenceIdentity(id FenceIdentity) (FenceIdentity, error) {
	var p []string
	if !runIDPattern().MatchString(id.RunID) {
		p = append(p, fmt.Sprintf("runId %q must be 1-128 characters of [A-Za-z0-9._:/+-] starting with a letter or digit", clipText(id.RunID, 64)))
	}
	if id.Epoch < 0 {
		p = append(p, fmt.Sprintf("epoch %d must be ≥ 0", id.Epoch))
	}
	if want := fmt.Sprintf("%s/%d", id.RunID, id.Epoch); id.AttemptID != want {
		p = append(p, fmt.Sprintf("attemptId %q must be %q (<runId>/<epoch>)", clipText(id.AttemptID, 64), clipText(want, 64)))
	}
	if !workerPattern().MatchString(id.Worker) {
		p = append(p, fmt.Sprintf("worker %q must be 1-64 characters of [A-Za-z0-9._-] starting with a letter or digit", clipText(id.Worker, 64)))
	}
	if !noncePattern().MatchString(id.Nonce) {
		p = append(p, fmt.Sprintf("nonce %q must be 32 lower-case hexadecimal characters", clipText(id.Nonce, 64)))
	}
	switch {
	case strings.ContainsRune(id.Path, 0):
		p = append(p, "path must not contain NUL")
	case !filepath.IsAbs(id.Path) || filepath.Clean(id.Path) != id.Path:
		p = append(p, fmt.Sprintf("path %q must be absolute and clean", clipText(id.Path, 64)))
	case len(id.Path) > 4096:
		p = append(p, fmt.Sprintf("path is %d bytes long, more than 4096", len(id.Path)))
	default:
		if name := filepath.Base(id.Path); !fenceNamePattern().MatchString(name) || strings.HasSuffix(name, JournalSuffix) {
			p = append(p, fmt.Sprintf("fence file name %q must be 1-64 characters of [A-Za-z0-9._-] starting with a letter or digit, not ending in %q", clipText(name, 64), JournalSuffix))
		}
	}
	if len(p) > 0 {
		return FenceIdentity{}, &FenceError{Problems: p}
	}
	return id, nil
}

// NewFenceIdentity returns a valid identity with a fresh random nonce for the fence file
// at path, or a *FenceError.
func NewFenceIdentity(runID string, epoch int64, worker, path string) (FenceIdentity, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return FenceIdentity{}, fmt.Errorf("fence nonce: %w", err)
	}
	return ParseFenceIdentity(FenceIdentity{
		RunID: runID, Epoch: epoch, AttemptID: fmt.Sprintf("%s/%d", runID, epoch),
		Worker: worker, Nonce: hex.EncodeToString(b[:]), Path: path,
	})
}

// label is the fence file's content: the canonical JSON of the identity.
func (id FenceIdentity) label() []byte {
	b, err := canonjson.Sorted(id)
	if err != nil { // a struct of strings and an int64 always encodes
		panic(fmt.Sprintf("worker: encoding fence identity: %v", err))
	}
	return b
}

// ProvisionFence creates the fence id names: its dedicated directory (mode 0o700, when it
// does not exist; an existing one must be empty), the fence file labelled with id and the
// empty hold file <fence>-journal. It returns a *FenceError for an invalid id or a
// directory holding anything else, and wrapped filesystem errors.
func ProvisionFence(id FenceIdentity) error {
	id, err := ParseFenceIdentity(id)
	if err != nil {
		return err
	}
	dir := filepath.Dir(id.Path)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating fence directory: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("listing fence directory: %w", err)
	}
	if len(entries) > 0 {
		return &FenceError{Problems: []string{fmt.Sprintf("fence directory %s is not empty (first entry %q)", dir, entries[0].Name())}}
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{id.Path, id.label()}, {id.Path + JournalSuffix, nil}} {
		if err := writeNew(f.path, f.data); err != nil {
			return fmt.Errorf("provisioning fence: %w", err)
		}
	}
	return nil
}

// writeNew creates path exclusively (mode 0o600), writes data and fsyncs it.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// maxLabelBytes bounds how much of a fence file is read as its label.
const maxLabelBytes = 8192

// ReadFenceLabel reads the identity a fence file at path is labelled with. It returns a
// *FenceError when the content is not exactly a valid identity's label.
func ReadFenceLabel(path string) (FenceIdentity, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return FenceIdentity{}, fmt.Errorf("opening fence file: %w", err)
	}
	defer f.Close()
	return readLabel(f)
}

func readLabel(f *os.File) (FenceIdentity, error) {
	data, err := io.ReadAll(io.NewSectionReader(f, 0, maxLabelBytes+1))
	if err != nil {
		return FenceIdentity{}, fmt.Errorf("reading fence label: %w", err)
	}
	id, err := parseLabel(data)
	if err != nil {
		return FenceIdentity{}, err
	}
	return id, nil
}

// parseLabel decodes a fence label (the fence file's content or the gate's environment
// value): strict JSON of exactly the FenceIdentity fields, in canonical form.
func parseLabel(data []byte) (FenceIdentity, error) {
	if len(data) > maxLabelBytes {
		return FenceIdentity{}, &FenceError{Problems: []string{fmt.Sprintf("label longer than %d bytes", maxLabelBytes)}}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var id FenceIdentity
	if err := dec.Decode(&id); err != nil {
		return FenceIdentity{}, &FenceError{Problems: []string{fmt.Sprintf("label is not a fence identity: %v", err)}}
	}
	id, err := ParseFenceIdentity(id)
	if err != nil {
		return FenceIdentity{}, err
	}
	if !bytes.Equal(data, id.label()) {
		return FenceIdentity{}, &FenceError{Problems: []string{"label is not the canonical encoding of its identity"}}
	}
	return id, nil
}

// fileID is a file's identity: device and inode numbers.
type fileID struct{ dev, ino uint64 }

func statID(fi os.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, true //nolint:unconvert // Dev's type differs by platform
}

func lstatID(path string) (fileID, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return fileID{}, err
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return fileID{}, fmt.Errorf("%s is neither a regular file nor a directory", path)
	}
	id, ok := statID(fi)
	if !ok {
		return fileID{}, fmt.Errorf("%s: no device and inode", path)
	}
	return id, nil
}

// checkDedicatedFenceDirectory checks that the fence's directory holds exactly <fence>
// and <fence>-journal, both regular files.
func checkDedicatedFenceDirectory(id FenceIdentity) error {
	dir, name := filepath.Split(id.Path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("fence directory: %w", err)
	}
	var p []string
	seen := 0
	for _, e := range entries {
		switch e.Name() {
		case name, name + JournalSuffix:
			if !e.Type().IsRegular() {
				p = append(p, fmt.Sprintf("%s is not a regular file", e.Name()))
			}
			seen++
		default:
			p = append(p, fmt.Sprintf("unexpected entry %q", clipText(e.Name(), 64)))
		}
	}
	if seen != 2 {
		p = append(p, fmt.Sprintf("want exactly %s and %s%s", name, name, JournalSuffix))
	}
	if len(p) > 0 {
		return &FenceError{Problems: []string{"fence directory " + dir + " is not dedicated: " + strings.Join(p, ", ")}}
	}
	return nil
}

// FenceHold is a controller's hold on an Attempt fence: an
// exclusive flock on <fence>-journal, taken by Hold and ended by Release. The worker
// only checks a hold (ControllerHoldProblem); it never releases the caller's hold. A
// FenceHold is safe for concurrent use.
type FenceHold struct {
	id       FenceIdentity
	journal  fileID // of <fence>-journal when the hold was taken
	fence    fileID // of <fence> when the hold was taken
	mu       sync.Mutex
	f        *os.File // the locked <fence>-journal; nil once released
	released bool
}

// Hold takes the controller hold on the fence id names. It checks the fence directory is dedicated, takes an exclusive
// non-blocking flock on <fence>-journal and requires the fence file's label to equal id
// exactly: a relabelled identity on the same file is refused. It returns a *FenceError
// for an invalid id, a directory that is not dedicated or a label mismatch, an error
// wrapping ErrFenceHeld when another holder has the lock, and wrapped filesystem errors.
func Hold(id FenceIdentity) (*FenceHold, error) {
	id, err := ParseFenceIdentity(id)
	if err != nil {
		return nil, err
	}
	if err := checkDedicatedFenceDirectory(id); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(id.Path+JournalSuffix, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("opening fence hold file: %w", err)
	}
	if err := flockNB(f); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", id.Path, ErrFenceHeld)
		}
		return nil, fmt.Errorf("locking fence hold file: %w", err)
	}
	h := &FenceHold{id: id, f: f}
	fail := func(err error) (*FenceHold, error) {
		_ = f.Close()
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		return fail(fmt.Errorf("fence hold file: %w", err))
	}
	h.journal, _ = statID(fi)
	label, err := ReadFenceLabel(id.Path)
	if err != nil {
		return fail(err)
	}
	if label != id {
		return fail(&FenceError{Problems: []string{fmt.Sprintf("fence file %s is labelled for attempt %s nonce %s, not this identity (a relabelled identity is refused)", id.Path, clipText(label.AttemptID, 64), label.Nonce)}})
	}
	if h.fence, err = lstatID(id.Path); err != nil {
		return fail(fmt.Errorf("fence file: %w", err))
	}
	return h, nil
}

// flockNB takes an exclusive flock on f without blocking (EWOULDBLOCK when held).
func flockNB(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			return err
		}
	}
}

// Identity returns the identity the hold was taken for (whether or not it is still held).
func (h *FenceHold) Identity() FenceIdentity { return h.id }

// Release ends the hold (closing the locked descriptor releases the flock). Only the
// controller that took the hold calls it; the worker never does. Releasing twice is a
// no-op. It returns the close error, if any.
func (h *FenceHold) Release() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return nil
	}
	h.released = true
	err := h.f.Close()
	h.f = nil
	return err
}

// ValidatedHoldIdentity returns the identity of a hold made by Hold, or a *FenceError for a nil hold or one not made by Hold. It does
// not say whether the hold is still live: ControllerHoldProblem does.
func ValidatedHoldIdentity(h *FenceHold) (FenceIdentity, error) {
	if h == nil {
		return FenceIdentity{}, &FenceError{Problems: []string{"hold is required"}}
	}
	id, err := ParseFenceIdentity(h.id)
	if err != nil || (h.journal == fileID{}) {
		return FenceIdentity{}, &FenceError{Problems: []string{"hold was not made by Hold"}}
	}
	return id, nil
}

// ControllerHoldProblem returns "" while h is a live controller hold, and otherwise one
// sentence saying why it is not: the hold is nil or
// released, its descriptor fails, or the hold file or fence file was removed or replaced
// since the hold was taken (then the lock no longer guards the fence's path). It does
// only non-blocking system calls (fstat, lstat).
func ControllerHoldProblem(h *FenceHold) string {
	if h == nil {
		return "no controller hold"
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return "the controller hold was released"
	}
	fi, err := h.f.Stat()
	if err != nil {
		return "the controller hold's descriptor failed: " + err.Error()
	}
	if got, _ := statID(fi); got != h.journal {
		return "the controller hold's descriptor changed"
	}
	if got, err := lstatID(h.id.Path + JournalSuffix); err != nil || got != h.journal {
		return "the fence hold file was removed or replaced"
	}
	if got, err := lstatID(h.id.Path); err != nil || got != h.fence {
		return "the fence file was removed or replaced"
	}
	return ""
}
