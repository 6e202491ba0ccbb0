package result

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// EvidenceManifestFile is the name of an attempt's evidence manifest in its directory.
const EvidenceManifestFile = "evidence-manifest.json"

// EvidenceManifestSchema tags an EvidenceManifest (agentproof's tags are
// agentproof.<name>/v<N>; the upstream tag paperclip.runner-e2e.evidence/v1 is not
// reused).
const EvidenceManifestSchema = "agentproof.evidence-manifest/v1"

// EvidenceManifest is an attempt's `evidence-manifest.json` (what the evidence
// allowlist kept): every file kept in the attempt directory with its size in
// bytes and SHA-256 as written (sorted by path; the manifest does not list itself),
// the leaks found while writing them (file and reason, never the value; the file as
// written no longer holds it, or was withheld), the files dropped by the allowlist, and
// the required evidence files that are missing (which made the attempt inconclusive).
type EvidenceManifest struct {
	Schema  string            `json:"schema"`
	Files   []EvidenceFile    `json:"files"`
	Leaks   []EvidenceLeak    `json:"leaks"`
	Dropped []EvidenceDropped `json:"dropped"`
	Missing []string          `json:"missing"`
}

// EvidenceFile is one kept file: path relative to the attempt directory
// (slash-separated), size in bytes and SHA-256 (hex) of the bytes written; Redacted is
// set when secrets were redacted from it before writing.
type EvidenceFile struct {
	Path     string `json:"path"`
	Bytes    int64  `json:"bytes"`
	SHA256   string `json:"sha256"`
	Redacted bool   `json:"redacted,omitempty"`
}

// EvidenceLeak is one leak found while packaging evidence: the file (relative path, any
// secret in it redacted) and the reason (redact.Leak.String()).
type EvidenceLeak struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// EvidenceDropped is a file the allowlist refused (or a leak withheld), with why.
type EvidenceDropped struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

var sha256Hex = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) })

// DecodeEvidenceManifest parses and strictly validates an evidence manifest: unknown
// fields, trailing data, a wrong schema tag, unsafe or unsorted or duplicate paths, a
// negative size and a malformed SHA-256 are reported together in a *ValidationError
// labelled label.
func DecodeEvidenceManifest(label string, b []byte) (*EvidenceManifest, error) {
	var m EvidenceManifest
	if err := decodeStrict(label, b, &m, false, "an evidence manifest", "manifest"); err != nil {
		return nil, err
	}
	if err := m.Validate(label); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate checks m (see DecodeEvidenceManifest) and returns a *ValidationError or nil.
func (m *EvidenceManifest) Validate(label string) error {
	var p []string
	if m.Schema != EvidenceManifestSchema {
		p = append(p, "schema: want "+EvidenceManifestSchema+", got "+m.Schema)
	}
	if m.Files == nil || m.Leaks == nil || m.Dropped == nil || m.Missing == nil {
		p = append(p, "files, leaks, dropped and missing must be arrays")
	}
	for i, f := range m.Files {
		if !SafeRelPath(f.Path) {
			p = append(p, "files: unsafe path "+quote(f.Path))
		}
		if i > 0 && strings.Compare(m.Files[i-1].Path, f.Path) >= 0 {
			p = append(p, "files: not sorted or duplicate at "+quote(f.Path))
		}
		if f.Bytes < 0 || !sha256Hex().MatchString(f.SHA256) {
			p = append(p, "files: "+quote(f.Path)+" needs a size ≥ 0 and a SHA-256 in lower-case hex")
		}
	}
	for _, l := range m.Leaks {
		if l.File == "" || l.Reason == "" {
			p = append(p, "leaks: every leak needs a file and a reason")
		}
	}
	for _, d := range m.Dropped {
		if d.File == "" || d.Reason == "" {
			p = append(p, "dropped: every entry needs a file and a reason")
		}
	}
	if !slices.IsSorted(m.Missing) {
		p = append(p, "missing: not sorted")
	}
	if len(p) > 0 {
		return &ValidationError{Label: label, Problems: p}
	}
	return nil
}

func quote(s string) string { b, _ := json.Marshal(Clip(s, 120)); return string(b) }

// EncodeEvidenceManifest encodes m as the manifest file is written (two-space
// indentation, no HTML escaping, final newline).
func EncodeEvidenceManifest(m *EvidenceManifest) ([]byte, error) { return encodeJSON(m) }
