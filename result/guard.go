package result

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentproof/agentproof/atomicfile"
	"github.com/agentproof/agentproof/redact"
)

// ErrNotAllowed matches the error of a guarded write whose file kind is not on the
// evidence allowlist.
var ErrNotAllowed = errors.New("not an allowed evidence file")

// FileKind is how the guard reads a results file (EvidenceKind): one of the Kind
// constants.
type FileKind string

// Evidence kinds (the evidence allowlist): what a file's extension makes of it.
const (
	// KindJSON: parsed, scanned key by key and value by value, sanitised as JSON.
	KindJSON FileKind = "json"
	// KindText: logs, plain text, Markdown, and XML/HTML agentproof renders itself;
	// scanned and redacted as text.
	KindText FileKind = "text"
	// KindImage: PNG; scanned as raw bytes (pixels cannot be inspected) and withheld
	// on any finding, never redacted.
	KindImage FileKind = "image"
)

// EvidenceKind returns the kind of a results file by its (lower-cased) extension and
// whether it may be kept at all. ours says the content was rendered by agentproof
// (result.json, summary.md, junit.xml, dashboard.html, its own logs and snapshots);
// content that came from an agent (its logs, its workspace) may be .json, .jsonl (JSON
// lines, such as a CLI's event stream, scanned and redacted as text: exact values in
// every form and key shapes), .log, .txt, .md or .png only: HTML and XML are kept only when ours (an agent's HTML could carry
// script, its XML a stylesheet), and SVG and every other extension (scripts, archives,
// binaries) never. The reason says why a file is refused.
func EvidenceKind(name string, ours bool) (kind FileKind, ok bool, reason string) {
	ext := strings.ToLower(path.Ext(name))
	switch ext {
	case ".json":
		return KindJSON, true, ""
	case ".jsonl", ".log", ".txt", ".md":
		return KindText, true, ""
	case ".xml", ".html":
		if ours {
			return KindText, true, ""
		}
		return "", false, "markup from an agent is active content"
	case ".png":
		return KindImage, true, ""
	case ".svg":
		return "", false, "SVG is active content"
	case "":
		return "", false, "a file without an extension is not on the allowlist"
	}
	return "", false, "extension " + ext + " is not on the allowlist"
}

// Guard is the one choke point through which agentproof writes a file into the results:
// evidence passes a sanitiser, and every written file is sanitised and then asserted
// secret-free before it is written. Secrets is the secret set (nil: only
// secret shapes are looked for). Every write:
//
//  1. refuses a file kind that is not on the allowlist (EvidenceKind);
//  2. scans the raw content — JSON key by key and value by value, text and PNG bytes
//     whole — for exact secrets and secret shapes;
//  3. when something was found, sanitises (JSON: SanitizeJSONBytes, text: RedactText)
//     and scans again; an image cannot be sanitised and is withheld;
//  4. writes the result atomically (atomicfile.WriteFile, mode 0644, creating the
//     directory when missing; without fsync when Deferred).
//
// Content without a finding is written byte for byte, so regenerating a clean report
// reproduces it exactly. A Guard is a value: safe for concurrent use.
type Guard struct {
	Secrets *redact.Set
	// Deferred writes atomically but without fsync (atomicfile.NoSync): the caller
	// makes the file durable later with atomicfile.SyncFilesystem (an attempt's
	// evidence, made durable at once before its result.json: campaign.Evidence).
	Deferred bool
}

// GuardedFile describes one guarded write: its size in bytes and SHA-256 (hex) as
// written, and the leaks found in the raw content (which the written file no longer
// holds). Withheld is set when the file was not written because a leak could not be
// removed (an image).
type GuardedFile struct {
	Bytes    int64
	SHA256   string
	Leaks    []redact.Leak
	Withheld bool
}

// Write guards data on its way to path (see Guard); ours is passed to EvidenceKind.
// Errors: ErrNotAllowed (wrapped) for a refused kind; a *redact.LeakError when a leak
// remains after sanitising or an image leaks (nothing is written, GuardedFile.Withheld
// and Leaks are set); a JSON file that does not parse; write errors. Leaks are named by
// reason and place only, never by value.
func (g Guard) Write(p string, data []byte, ours bool) (GuardedFile, error) {
	clean, out, err := g.guard(p, data, ours)
	if err != nil {
		return out, err
	}
	opts := []atomicfile.Option{atomicfile.MakeDirs()}
	if g.Deferred {
		opts = append(opts, atomicfile.NoSync())
	}
	if err := atomicfile.WriteFile(p, clean, FileMode, opts...); err != nil {
		return out, err
	}
	return out, nil
}

// FileMode is the mode of every file written into the results.
const FileMode = 0o644

// guard is Write's guarding: the bytes to write to p and the GuardedFile describing
// them. Errors as Write's, before anything is written.
func (g Guard) guard(p string, data []byte, ours bool) ([]byte, GuardedFile, error) {
	name := filepath.Base(p)
	kind, ok, reason := EvidenceKind(name, ours)
	if !ok {
		return nil, GuardedFile{}, fmt.Errorf("refusing to write %s: %s: %w", g.Secrets.SafePath(name), reason, ErrNotAllowed)
	}
	clean, leaks, err := g.sanitize(name, kind, data)
	out := GuardedFile{Leaks: leaks}
	if err != nil {
		out.Withheld = errors.Is(err, redact.ErrLeak)
		return nil, out, fmt.Errorf("refusing to write %s: %w", g.Secrets.SafePath(p), err)
	}
	sum := sha256.Sum256(clean)
	out.Bytes, out.SHA256 = int64(len(clean)), hex.EncodeToString(sum[:])
	return clean, out, nil
}

// StageWrite is Write leaving the guarded bytes in a temporary file beside p, closed
// and not synced (see GuardedWriter.Stage, atomicfile.CommitStaged). Errors as
// Write's.
func (g Guard) StageWrite(p string, data []byte, ours bool) (GuardedFile, atomicfile.Staged, error) {
	clean, out, err := g.guard(p, data, ours)
	if err != nil {
		return out, atomicfile.Staged{}, err
	}
	pf, err := atomicfile.Create(p, FileMode, atomicfile.MakeDirs())
	if err != nil {
		return out, atomicfile.Staged{}, err
	}
	if _, err := pf.Write(clean); err != nil {
		pf.Discard()
		return out, atomicfile.Staged{}, err
	}
	st, err := pf.Stage()
	if err != nil {
		return out, atomicfile.Staged{}, err
	}
	return out, st, nil
}

// Sanitize is Write without writing: the bytes that would be written and the leaks
// found in data. Errors as Write's.
func (g Guard) Sanitize(name string, data []byte, ours bool) ([]byte, []redact.Leak, error) {
	kind, ok, reason := EvidenceKind(name, ours)
	if !ok {
		return nil, nil, fmt.Errorf("%s: %s: %w", g.Secrets.SafePath(name), reason, ErrNotAllowed)
	}
	return g.sanitize(name, kind, data)
}

func (g Guard) sanitize(name string, kind FileKind, data []byte) ([]byte, []redact.Leak, error) {
	s := g.Secrets
	switch kind {
	case KindJSON:
		if s.CleanJSON(data) {
			// Nothing leaks (what ScanJSON and FindLeak below would find, decided
			// without decoding the document): written byte for byte, as below.
			return data, nil, nil
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("%s is not JSON: %w", name, err)
		}
		leaks := s.ScanJSON(v, true)
		if len(leaks) == 0 {
			// the document's own bytes (escapes, whitespace) hold no exact value either
			if l, ok := s.FindLeak(data, false); ok {
				leaks = append(leaks, l)
			}
		}
		if len(leaks) == 0 {
			return data, nil, nil
		}
		clean, err := s.SanitizeJSONBytes(name, data)
		if err != nil {
			return nil, leaks, err
		}
		return clean, leaks, s.Check(name, clean, true)
	case KindText:
		l, ok := s.FindLeak(data, true)
		if !ok {
			return data, nil, nil
		}
		clean := []byte(s.RedactText(string(data)))
		return clean, []redact.Leak{l}, s.Check(name, clean, true)
	default: // KindImage
		if l, ok := s.FindLeak(data, true); ok {
			return nil, []redact.Leak{l}, &redact.LeakError{Label: name, Leaks: []redact.Leak{l}}
		}
		return data, nil, nil
	}
}
