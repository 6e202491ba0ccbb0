package result

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/agentproof/agentproof/atomicfile"
	"github.com/agentproof/agentproof/redact"
)

// GuardedWriter is a guarded write (Guard) of a file produced in pieces, so that the
// whole content is never held in memory: the pieces go to a temporary file beside the
// destination while a redact.StreamScanner, which finds a leak exactly when the guard's
// whole-content scan does, looks at them; a JSON file is then read back token by token
// and every key and string scanned for exact values and shapes and every number for
// exact values, as the guard scans a decoded document. Clean content is renamed into
// place byte for byte. Content with a finding (or JSON that does not parse) takes the
// guard's own path, Guard.Write over the bytes read back, so its outcome is Write's in
// every case; only then is the file held whole. Not safe for concurrent use.
type GuardedWriter struct {
	g    Guard
	path string
	ours bool
	kind FileKind
	f    *atomicfile.Pending // nil once the write has ended
	tmp  string
	bw   *bufio.Writer
	scan *redact.StreamScanner
	sum  hash.Hash
	n    int64
	err  error
	// cleanLimit is the largest JSON document (bytes) read back whole for
	// redact.Set.CleanJSON (maxCleanJSON).
	cleanLimit int64
}

// streamBuffer is the size of a guarded writer's buffer (bytes): the scanner sees the
// content in pieces of this size.
const streamBuffer = 64 << 10

// Create starts a guarded write of path (ours is passed to EvidenceKind); the file
// appears only when Close succeeds. Errors: ErrNotAllowed (wrapped) for a refused kind,
// or the temporary file's creation.
func (g Guard) Create(p string, ours bool) (*GuardedWriter, error) {
	return g.create(p, ours, maxCleanJSON)
}

// create is Create with the largest JSON document read back whole (cleanJSON).
func (g Guard) create(p string, ours bool, cleanLimit int64) (*GuardedWriter, error) {
	name := filepath.Base(p)
	kind, ok, reason := EvidenceKind(name, ours)
	if !ok {
		return nil, fmt.Errorf("refusing to write %s: %s: %w", g.Secrets.SafePath(name), reason, ErrNotAllowed)
	}
	f, err := atomicfile.Create(p, FileMode, atomicfile.MakeDirs())
	if err != nil {
		return nil, err
	}
	w := &GuardedWriter{g: g, path: p, ours: ours, kind: kind, f: f, tmp: f.File().Name(), sum: sha256.New(),
		scan: g.Secrets.NewStreamScanner(kind != KindJSON), cleanLimit: cleanLimit}
	w.bw = bufio.NewWriterSize(writerFunc(w.emit), streamBuffer)
	return w, nil
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// emit passes buffered content to the file, the scanner and the digest.
func (w *GuardedWriter) emit(p []byte) (int, error) {
	n, err := w.f.File().Write(p)
	_, _ = w.scan.Write(p[:n])
	_, _ = w.sum.Write(p[:n])
	w.n += int64(n)
	return n, err
}

// Write adds p to the file. The first error is kept and returned by every later Write
// and by Close.
func (w *GuardedWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	return w.wrote(w.bw.Write(p))
}

// WriteString is Write for a string.
func (w *GuardedWriter) WriteString(s string) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	return w.wrote(w.bw.WriteString(s))
}

// wrote takes what a write to the buffer returned: its error becomes the writer's
// first error (naming the file); it returns n and the writer's error.
func (w *GuardedWriter) wrote(n int, err error) (int, error) {
	if err != nil {
		w.err = fmt.Errorf("writing %s: %w", w.path, err)
	}
	return n, w.err
}

// Abort ends the write without a file (after a rendering error); Close after Abort
// reports the abort.
func (w *GuardedWriter) Abort() {
	if w.f != nil {
		w.f.Discard()
		w.f = nil
	}
	if w.err == nil {
		w.err = fmt.Errorf("writing %s: aborted", w.path)
	}
}

// Close finishes the write: clean content is synced and renamed into place (a durable
// atomicfile write), anything else is guarded as Guard.Write guards it. The result and
// errors are Write's.
func (w *GuardedWriter) Close() (GuardedFile, error) {
	f, data, err := w.finish()
	switch {
	case err != nil:
		return GuardedFile{}, err
	case f == nil:
		return w.g.Write(w.path, data, w.ours)
	}
	if err := f.Commit(); err != nil {
		return GuardedFile{}, err
	}
	return w.written(), nil
}

// Stage is Close without putting the file in place: the guarded content (what Close
// would write) is left, closed and not synced, in its temporary file, and
// atomicfile.CommitStaged puts a batch of such files in place with one sync of their
// file system. The GuardedFile and errors are Close's; on an error nothing is left.
func (w *GuardedWriter) Stage() (GuardedFile, atomicfile.Staged, error) {
	f, data, err := w.finish()
	switch {
	case err != nil:
		return GuardedFile{}, atomicfile.Staged{}, err
	case f == nil:
		return w.g.StageWrite(w.path, data, w.ours)
	}
	st, err := f.Stage()
	if err != nil {
		return GuardedFile{}, atomicfile.Staged{}, err
	}
	return w.written(), st, nil
}

// written describes the clean content w wrote.
func (w *GuardedWriter) written() GuardedFile {
	return GuardedFile{Bytes: w.n, SHA256: hex.EncodeToString(w.sum.Sum(nil))}
}

// finish ends the write of w's content: clean content stays in w's temporary file,
// returned open; content with a finding is read back and returned as data (the
// temporary file removed) for Guard.Write or Guard.StageWrite to guard. Errors: the
// write's first error (nothing is then left).
func (w *GuardedWriter) finish() (*atomicfile.Pending, []byte, error) {
	if w.f == nil {
		return nil, nil, w.err
	}
	if w.err == nil {
		if err := w.bw.Flush(); err != nil && w.err == nil {
			w.err = fmt.Errorf("writing %s: %w", w.path, err)
		}
	}
	if w.err != nil {
		w.Abort()
		return nil, nil, w.err
	}
	_, found := w.scan.Leak()
	if !found && w.kind == KindJSON && !w.cleanJSON() {
		var err error
		if found, err = w.scanJSON(); err != nil {
			found = true // not JSON: Write says so
		}
	}
	if found {
		data, err := os.ReadFile(w.tmp)
		w.Abort()
		if err != nil {
			return nil, nil, fmt.Errorf("reading back %s: %w", w.tmp, err)
		}
		return nil, data, nil
	}
	f := w.f
	w.f = nil
	return f, nil, nil
}

// maxCleanJSON is the largest JSON file (bytes) a guarded writer reads back whole to
// pass it with redact.Set.CleanJSON (one search of its bytes) before reading it token
// by token (several times slower): 32 MiB, the campaign.json of some 7,000 cells, so
// that the memory a guarded write holds stays bounded.
const maxCleanJSON = 32 << 20

// cleanJSON reports whether the written document, when at most w.cleanLimit bytes, is
// clean by redact.Set.CleanJSON (one search of its bytes; true implies scanJSON finds
// nothing); false means scanJSON decides.
func (w *GuardedWriter) cleanJSON() bool {
	if w.n > w.cleanLimit {
		return false
	}
	data, err := os.ReadFile(w.tmp)
	return err == nil && int64(len(data)) == w.n && w.g.Secrets.CleanJSON(data)
}

// scanJSON reads the written document back token by token: it reports whether a key
// or string holds an exact value or a shape, or a number an exact value (what
// redact.Set.ScanJSON finds in the decoded document), and an error when the first
// value is not JSON.
func (w *GuardedWriter) scanJSON() (bool, error) {
	f, err := os.Open(w.tmp)
	if err != nil {
		return false, err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, streamBuffer))
	dec.UseNumber()
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return false, err
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				depth++
			} else {
				depth--
			}
		case string:
			if _, ok := w.g.Secrets.FindLeak([]byte(t), true); ok {
				return true, nil
			}
		case json.Number:
			if _, ok := w.g.Secrets.FindLeak([]byte(t), false); ok {
				return true, nil
			}
		}
		if depth == 0 {
			return false, nil
		}
	}
}

// StageCopy stages a second file at path with the content of the staged file from
// (staged and not yet committed), which a guarded write of this Guard produced and
// described as gf: the bytes are copied as they are (by the kernel, without reading
// them into memory) and not scanned again, since they are already the guard's output,
// and the GuardedFile returned is gf without its leaks (they were the raw content's,
// which the copy does not hold). Errors: path's kind is refused (ErrNotAllowed, as
// Create), from cannot be read, or the copy cannot be written (nothing is then left).
func (g Guard) StageCopy(path string, from atomicfile.Staged, gf GuardedFile, ours bool) (GuardedFile, atomicfile.Staged, error) {
	name := filepath.Base(path)
	if _, ok, reason := EvidenceKind(name, ours); !ok {
		return GuardedFile{}, atomicfile.Staged{}, fmt.Errorf("refusing to write %s: %s: %w", g.Secrets.SafePath(name), reason, ErrNotAllowed)
	}
	src := from.Temp()
	in, err := os.Open(src)
	if err != nil {
		return GuardedFile{}, atomicfile.Staged{}, fmt.Errorf("reading %s: %w", src, err)
	}
	defer in.Close()
	pf, err := atomicfile.Create(path, FileMode, atomicfile.MakeDirs())
	if err != nil {
		return GuardedFile{}, atomicfile.Staged{}, err
	}
	if n, err := io.Copy(pf, in); err != nil || n != gf.Bytes {
		pf.Discard()
		if err == nil {
			err = fmt.Errorf("%d bytes, not the %d staged", n, gf.Bytes)
		}
		return GuardedFile{}, atomicfile.Staged{}, fmt.Errorf("copying %s to %s: %w", src, path, err)
	}
	st, err := pf.Stage()
	if err != nil {
		return GuardedFile{}, atomicfile.Staged{}, err
	}
	return GuardedFile{Bytes: gf.Bytes, SHA256: gf.SHA256}, st, nil
}

// StageRender stages (GuardedWriter.Stage) a guarded write of path with what render
// produces; a render error aborts it, leaving no file.
func (g Guard) StageRender(p string, render func(io.Writer) error, ours bool) (GuardedFile, atomicfile.Staged, error) {
	w, err := g.Create(p, ours)
	if err != nil {
		return GuardedFile{}, atomicfile.Staged{}, err
	}
	if err := render(w); err != nil {
		w.Abort()
		return GuardedFile{}, atomicfile.Staged{}, err
	}
	return w.Stage()
}

var _ io.StringWriter = (*GuardedWriter)(nil)
