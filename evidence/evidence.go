// Package evidence is agentproof's content-addressed evidence store: what a collector
// observed, recorded exactly and never interpreted.
//
// A record is canonical metadata (pins, check name, collection time and a
// ProcessObservation) plus the raw body bytes a collector framed. Its id is the SHA-256
// of the record's stored bytes:
//
//	"agentproof-evidence/1\n" + canonjson.Sorted(metadata) + "\n" + body
//
// Canonical JSON never contains a raw newline, so the first newline after the header
// separates metadata from body unambiguously. The file at <dir>/<id[:2]>/<id> holds exactly
// those bytes, so a record can be re-verified by hashing the file. Writes go to a temp file
// in the same directory, are fsynced and renamed into place; identical records written
// concurrently end as one file with identical bytes.
package evidence

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// Collector tags and body-layout constants (docs/fixture-worker.md).
const (
	// LocalFixtureCollector is the collector tag of the worker's unguarded run path.
	LocalFixtureCollector = "sf-local-fixture-worker/1"
	// LocalFixtureBodyTag starts every local-fixture evidence body.
	LocalFixtureBodyTag = "sf-local-fixture/1"
	// RecordHeader is the first line of every stored record file; it versions the framing.
	RecordHeader = "agentproof-evidence/1"
)

// Pins are the caller's statement of what an observation is evidence for. They are
// stored verbatim and validated by ParsePins.
//
//   - Collector: the collector tag of the path that records (for the unguarded worker
//     path exactly LocalFixtureCollector).
//   - Environment: the runtime the scenario pins, e.g. "go1.26.8/linux-amd64"; the worker
//     records it and never compares it with the runtime it uses.
//   - RunID, Epoch, AttemptID: optional attempt identity; when any is set, all three must
//     be, and AttemptID must equal "<RunID>/<Epoch>".
type Pins struct {
	Collector   string `json:"collector"`
	Environment string `json:"environment"`
	RunID       string `json:"runId,omitempty"`
	Epoch       int64  `json:"epoch,omitempty"`
	AttemptID   string `json:"attemptId,omitempty"`
}

// ValidationError reports every problem found in a pin set, a check name or a record
// identifier at once. Problems are human-readable sentences
// naming the field.
type ValidationError struct {
	What     string
	Problems []string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("invalid %s: %s", e.What, strings.Join(e.Problems, "; "))
}

// ErrNotFound is returned (wrapped) by Store.Get for a well-formed id with no record.
var ErrNotFound = errors.New("evidence record not found")

// ErrCorrupt is returned (wrapped) by Store.Get when a stored file does not hash to its
// id or does not parse as a record.
var ErrCorrupt = errors.New("evidence record corrupt")

var (
	tagPattern   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/+-]{0,127}$`) })
	checkPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`) })
	idPattern    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) })
)

// ParsePins validates p and returns a copy. Collector and Environment must be 1–128
// characters of [A-Za-z0-9._:/+-] starting with a letter or digit; RunID likewise when
// set; Epoch must be ≥ 0. All problems are returned together as a *ValidationError.
func ParsePins(p Pins) (Pins, error) {
	var problems []string
	check := func(field, v string) {
		if !tagPattern().MatchString(v) {
			problems = append(problems, fmt.Sprintf("%s %q must be 1-128 characters of [A-Za-z0-9._:/+-] starting with a letter or digit", field, clip(v)))
		}
	}
	check("collector", p.Collector)
	check("environment", p.Environment)
	if p.RunID != "" || p.AttemptID != "" || p.Epoch != 0 {
		check("runId", p.RunID)
		if p.Epoch < 0 {
			problems = append(problems, fmt.Sprintf("epoch %d must be ≥ 0", p.Epoch))
		}
		if want := fmt.Sprintf("%s/%d", p.RunID, p.Epoch); p.AttemptID != want {
			problems = append(problems, fmt.Sprintf("attemptId %q must be %q (<runId>/<epoch>)", clip(p.AttemptID), clip(want)))
		}
	}
	if len(problems) > 0 {
		return Pins{}, &ValidationError{What: "pins", Problems: problems}
	}
	return p, nil
}

// ParseCheckName validates a check name: 1–64 characters of [a-z0-9._-] starting with a
// letter or digit. It returns a *ValidationError otherwise.
func ParseCheckName(name string) (string, error) {
	if !checkPattern().MatchString(name) {
		return "", &ValidationError{What: "check name", Problems: []string{
			fmt.Sprintf("%q must be 1-64 characters of [a-z0-9._-] starting with a letter or digit", clip(name)),
		}}
	}
	return name, nil
}

// ParseID validates a record id: 64 lower-case hexadecimal characters (a SHA-256). It
// returns a *ValidationError otherwise.
func ParseID(id string) (string, error) {
	if !idPattern().MatchString(id) {
		return "", &ValidationError{What: "evidence id", Problems: []string{
			fmt.Sprintf("%q must be 64 lower-case hexadecimal characters", clip(id)),
		}}
	}
	return id, nil
}

// clip shortens untrusted text embedded in error messages to 64 runes.
func clip(s string) string {
	if utf8.RuneCountInString(s) <= 64 {
		return s
	}
	r := []rune(s)
	return string(r[:64]) + "…"
}
