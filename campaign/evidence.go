package campaign

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agentproof/agentproof/atomicfile"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/result"
)

// RequiredEvidence are the files every attempt that reached grading must leave in its
// directory (a missing one makes the attempt inconclusive): the API snapshot the matchers were evaluated against, the
// workspace manifest and the fixture states. result.json and evidence-manifest.json are
// written after the verdict and are always present.
var RequiredEvidence = []string{"fixtures.json", "snapshots/api-state.json", "workspace-manifest.json"}

// Evidence packages one attempt's evidence: every file goes through result.Guard
// (allowlist, raw scan, sanitise, re-scan, atomic write: temp file, rename) and is
// recorded for evidence-manifest.json with its size, SHA-256 and the leaks found on
// the way. It is safe for concurrent use.
//
// Durability: result.json is the attempt's commit record. The evidence files before
// it are written atomically but not fsynced one by one (result.Guard.Deferred); right
// before result.json the file system that holds them is synced once
// (atomicfile.SyncFilesystem), then result.json and evidence-manifest.json are written
// durably (fsync, rename, directory fsync). A killed run leaves complete files or none
// (the rename is atomic and the page cache survives the process); after an
// operating-system crash, an attempt whose result.json exists has all its evidence,
// and one without result.json is run again by `run --resume` (a new attempt
// directory; docs/processes.md "Durability of results").
type Evidence struct {
	dir string // the attempt directory (absolute)

	mu      sync.Mutex
	files   map[string]result.EvidenceFile
	leaks   []result.EvidenceLeak
	dropped []result.EvidenceDropped
	missing []string
}

// NewEvidence returns the evidence writer of the attempt directory dir (absolute).
func NewEvidence(dir string) *Evidence {
	return &Evidence{dir: dir, files: map[string]result.EvidenceFile{}}
}

// Dir is the attempt directory.
func (w *Evidence) Dir() string { return w.dir }

// Write guards b into rel (slash-separated, relative to the attempt directory) with
// secrets (nil for none); ours says agentproof rendered the content
// (result.EvidenceKind). It reports whether the file was written. A leak found is
// recorded (and the file written sanitised, or withheld); a refused kind is recorded
// as dropped. Empty content is not written.
func (w *Evidence) Write(secrets *redact.Set, rel string, b []byte, ours bool) bool {
	if len(b) == 0 {
		return false
	}
	safe := secrets.SafePath(rel)
	if safe != rel || !result.SafeRelPath(rel) {
		w.record(func() {
			w.dropped = append(w.dropped, result.EvidenceDropped{File: safe, Reason: "unsafe file name"})
			if safe != rel {
				w.leaks = append(w.leaks, result.EvidenceLeak{File: safe, Reason: "secret in the file name"})
			}
		})
		return false
	}
	commit := rel == ResultFile || rel == result.EvidenceManifestFile
	gf, err := result.Guard{Secrets: secrets, Deferred: !commit}.Write(filepath.Join(w.dir, filepath.FromSlash(rel)), b, ours)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range gf.Leaks {
		w.leaks = append(w.leaks, result.EvidenceLeak{File: rel, Reason: l.String()})
	}
	if err != nil {
		reason := "could not be written"
		switch {
		case gf.Withheld:
			reason = "withheld: it holds a secret that cannot be redacted"
		case strings.Contains(err.Error(), result.ErrNotAllowed.Error()):
			_, _, reason = result.EvidenceKind(rel, ours)
		}
		w.dropped = append(w.dropped, result.EvidenceDropped{File: rel, Reason: reason})
		delete(w.files, rel)
		return false
	}
	w.files[rel] = result.EvidenceFile{Path: rel, Bytes: gf.Bytes, SHA256: gf.SHA256, Redacted: len(gf.Leaks) > 0}
	return true
}

func (w *Evidence) record(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f()
}

// CheckRequired records which of RequiredEvidence are missing and returns them.
func (w *Evidence) CheckRequired() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.missing = nil
	for _, rel := range RequiredEvidence {
		if _, ok := w.files[rel]; !ok {
			w.missing = append(w.missing, rel)
		}
	}
	return slices.Clone(w.missing)
}

// Leaks describes the leaks found while writing ("evidence <file>: <reason>").
func (w *Evidence) Leaks() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, l := range w.leaks {
		out = append(out, fmt.Sprintf("evidence %s: %s", l.File, l.Reason))
	}
	return out
}

// Files returns the files written so far, sorted (relative slash paths).
func (w *Evidence) Files() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.files))
}

// manifest returns the evidence manifest of what was written (files sorted by path).
func (w *Evidence) manifest() *result.EvidenceManifest {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := &result.EvidenceManifest{Schema: result.EvidenceManifestSchema, Files: []result.EvidenceFile{},
		Leaks: slices.Clone(w.leaks), Dropped: slices.Clone(w.dropped), Missing: slices.Clone(w.missing)}
	for _, rel := range slices.Sorted(maps.Keys(w.files)) {
		if rel != result.EvidenceManifestFile {
			m.Files = append(m.Files, w.files[rel])
		}
	}
	if m.Leaks == nil {
		m.Leaks = []result.EvidenceLeak{}
	}
	if m.Dropped == nil {
		m.Dropped = []result.EvidenceDropped{}
	}
	if m.Missing == nil {
		m.Missing = []string{}
	}
	return m
}

// writeResultAndManifest writes result.json (sanitised with secrets, then guarded) and
// then evidence-manifest.json listing every file of the attempt, result.json included,
// both into w's directory.
func writeResultAndManifest(res *result.Result, secrets *redact.Set, w *Evidence) error {
	dir := w.dir
	if secrets != nil {
		result.SanitizeResult(secrets, res)
	}
	if !slices.Contains(res.Evidence, result.EvidenceManifestFile) {
		res.Evidence = slices.Sorted(slices.Values(append(res.Evidence, result.EvidenceManifestFile)))
	}
	if err := res.Validate(filepath.Join(dir, ResultFile)); err != nil {
		return err
	}
	b, err := result.EncodeResult(res)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", filepath.Join(dir, ResultFile), err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	// The evidence written so far becomes durable before the record that refers to it.
	if err := atomicfile.SyncFilesystem(dir); err != nil {
		return err
	}
	if !w.Write(secrets, ResultFile, b, true) {
		return fmt.Errorf("writing %s: refused by the evidence guard (see %s)", filepath.Join(dir, ResultFile), result.EvidenceManifestFile)
	}
	mb, err := result.EncodeEvidenceManifest(w.manifest())
	if err != nil {
		return fmt.Errorf("encoding %s: %w", result.EvidenceManifestFile, err)
	}
	if !w.Write(secrets, result.EvidenceManifestFile, mb, true) {
		return fmt.Errorf("writing %s: refused by the evidence guard", filepath.Join(dir, result.EvidenceManifestFile))
	}
	return nil
}
