package result

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentproof/agentproof/atomicfile"
)

// ErrMergeCampaign is wrapped by Merge when the campaign to merge into is not
// determined: the sources name several campaigns and none was chosen, or the id is not a
// valid campaign id. It is a usage error: the caller must pick a campaign id.
var ErrMergeCampaign = errors.New("merge campaign id")

// ParseExpectedIDs reads an expected-ids file: the JSON document of `agentproof list
// --matrix-json` (its executionIds, or the include[].executionId when executionIds is
// absent), a JSON array of ids, or plain text with one id per line (blank lines and
// lines starting with '#' ignored). Ids are returned sorted and must be unique and
// well-formed (<suite>.<profile>.<environment>.<case>); every problem is reported in a
// *ValidationError.
func ParseExpectedIDs(label string, b []byte) ([]string, error) {
	var ids []string
	trimmed := bytes.TrimSpace(b)
	switch {
	case bytes.HasPrefix(trimmed, []byte("{")):
		var doc struct {
			Include []struct {
				ExecutionID string `json:"executionId"`
			} `json:"include"`
			ExecutionIDs []string `json:"executionIds"`
		}
		if err := json.Unmarshal(trimmed, &doc); err != nil {
			return nil, &ValidationError{Label: label, Problems: []string{"not a --matrix-json document: " + err.Error()}}
		}
		ids = doc.ExecutionIDs
		if ids == nil {
			for _, j := range doc.Include {
				ids = append(ids, j.ExecutionID)
			}
		}
	case bytes.HasPrefix(trimmed, []byte("[")):
		if err := json.Unmarshal(trimmed, &ids); err != nil {
			return nil, &ValidationError{Label: label, Problems: []string{"not a JSON array of ids: " + err.Error()}}
		}
	default:
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			ids = append(ids, line)
		}
		if err := sc.Err(); err != nil {
			return nil, &ValidationError{Label: label, Problems: []string{err.Error()}}
		}
	}
	var problems []string
	seen := map[string]bool{}
	for _, id := range ids {
		if _, _, _, _, ok := ParseExecutionID(id); !ok {
			problems = append(problems, fmt.Sprintf("%q is not an execution id <suite>.<profile>.<environment>.<case>", Clip(Clean(id, true), 80)))
		}
		if seen[id] {
			problems = append(problems, fmt.Sprintf("%q appears twice", id))
		}
		seen[id] = true
	}
	if len(ids) == 0 {
		problems = append(problems, "no execution ids")
	}
	if len(problems) > 0 {
		return nil, &ValidationError{Label: label, Problems: problems}
	}
	slices.Sort(ids)
	return ids, nil
}

// MergeOptions says which attempt directories to merge into which campaign.
type MergeOptions struct {
	// Sources are directories produced by separate machines (results roots, campaign
	// directories or attempt directories); every result.json below them in a
	// directory named attempt-… is an attempt.
	Sources []string
	// ResultsRoot and CampaignID name the target campaign directory. An empty
	// CampaignID is taken from the results when they all agree.
	ResultsRoot string
	CampaignID  string
	// Claim, when set, is called with the target campaign directory before anything is
	// copied into it; its error stops the merge and is returned as it is.
	Claim func(campaignDir string) error
}

// Merged reports what Merge copied and skipped.
type Merged struct {
	CampaignID string
	Copied     []string // target attempt directories, relative to the campaign directory
	Skipped    []string // identical attempts already present
	Warnings   []string
	placed     map[string][]byte // result.json of the attempts copied so far, by place
}

type sourceAttempt struct {
	dir    string
	result *Result
	digest string
	raw    []byte
}

// Merge copies every attempt directory found under the sources into
// ResultsRoot/<campaign>/<suite>/<profile>/<environment>/<case>/attempt-<n>/ (the
// layout `agentproof run` writes). An identical attempt already there (same result.json
// bytes) is skipped, so merging twice changes nothing; a different attempt with the
// same number (a rerun of a CI job) goes to attempt-<n>-<12 hex digits of its
// result.json's SHA-256>, and best-attempt selection chooses between them. Symbolic
// links and special files are not copied. A result.json that does not decode, or names
// no valid execution id, is skipped with a warning. Every copied result.json is written
// after the evidence of all copied attempts is durable, so a half-copied attempt is
// never mistaken for a complete one. Run report.Generate afterwards.
func Merge(opts MergeOptions) (*Merged, error) {
	m := &Merged{placed: map[string][]byte{}}
	found, campaigns, err := findAttempts(opts.Sources, m)
	if err != nil {
		return nil, err
	}
	if m.CampaignID, err = mergeCampaignID(opts.CampaignID, campaigns); err != nil {
		return nil, err
	}
	// Deterministic order: by execution id, attempt, digest.
	slices.SortFunc(found, func(a, b sourceAttempt) int {
		if c := strings.Compare(a.result.ExecutionID, b.result.ExecutionID); c != 0 {
			return c
		}
		if a.result.Attempt != b.result.Attempt {
			return a.result.Attempt - b.result.Attempt
		}
		return strings.Compare(a.digest, b.digest)
	})
	campaignDir := filepath.Join(opts.ResultsRoot, m.CampaignID)
	if opts.Claim != nil {
		if err := opts.Claim(campaignDir); err != nil {
			return nil, err
		}
	}
	var pending []*pendingResult
	for _, a := range found {
		p, err := m.place(campaignDir, a)
		if err != nil {
			return nil, err
		}
		if p != nil {
			pending = append(pending, p)
		}
	}
	if err := m.writeResults(campaignDir, pending); err != nil {
		return nil, err
	}
	return m, nil
}

// findAttempts reads every attempt record (a result.json in a directory named
// attempt-…) under the sources: each with a valid execution id and attempt, and the
// set of valid campaign ids they name. A record that does not decode, or names no
// valid execution id and attempt, is skipped with a warning in m. Errors: a source
// that is not a directory or cannot be read.
func findAttempts(sources []string, m *Merged) ([]sourceAttempt, map[string]bool, error) {
	var found []sourceAttempt
	campaigns := map[string]bool{}
	for _, src := range sources {
		st, err := os.Stat(src)
		if err != nil {
			return nil, nil, fmt.Errorf("merge source: %w", err)
		}
		if !st.IsDir() {
			return nil, nil, fmt.Errorf("merge source %s is not a directory", src)
		}
		err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !isAttemptRecord(p, d) {
				return nil
			}
			raw, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			var r Result
			if err := json.Unmarshal(raw, &r); err != nil {
				m.Warnings = append(m.Warnings, fmt.Sprintf("skipped %s: not a result document: %v", p, err))
				return nil
			}
			if _, _, _, _, ok := ParseExecutionID(r.ExecutionID); !ok || r.Attempt < 1 {
				m.Warnings = append(m.Warnings, fmt.Sprintf("skipped %s: no valid executionId and attempt", p))
				return nil
			}
			sum := sha256.Sum256(raw)
			found = append(found, sourceAttempt{dir: filepath.Dir(p), result: &r, digest: hex.EncodeToString(sum[:]), raw: raw})
			if validCampaignID(r.CampaignID) {
				campaigns[r.CampaignID] = true
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("reading merge source %s: %w", src, err)
		}
	}
	return found, campaigns, nil
}

// mergeCampaignID is the campaign to merge into: the given id, else the one campaign
// the attempts name. Errors (ErrMergeCampaign): the attempts name none or several and
// none was given, or the id is not a valid campaign id.
func mergeCampaignID(given string, campaigns map[string]bool) (string, error) {
	id := given
	if id == "" {
		ids := slices.Sorted(maps.Keys(campaigns))
		if len(ids) != 1 {
			return "", fmt.Errorf("%w: the merged results name %d campaigns (%s): choose one with --campaign", ErrMergeCampaign, len(ids), strings.Join(ids, ", "))
		}
		id = ids[0]
	}
	if !validCampaignID(id) {
		return "", fmt.Errorf("%w: %q must match [A-Za-z0-9][A-Za-z0-9._-]{0,199}", ErrMergeCampaign, id)
	}
	return id, nil
}

// place copies the evidence of attempt a into campaignDir at <suite>/<profile>/
// <environment>/<case>/attempt-<n>, or beside it at attempt-<n>-<12 hex digits of its
// digest> when another attempt holds that place, and records it in m as copied, or as
// skipped when an identical one is there already. The copied attempt's result.json is
// returned to be written once every attempt's evidence is durable (nil when skipped).
// Error: the copy failed.
func (m *Merged) place(campaignDir string, a sourceAttempt) (*pendingResult, error) {
	s, p, e, c, _ := ParseExecutionID(a.result.ExecutionID)
	base := filepath.Join(s, p, e, c, "attempt-"+strconv.Itoa(a.result.Attempt))
	held := func(rel string) ([]byte, error) {
		if raw, ok := m.placed[rel]; ok {
			return raw, nil
		}
		return os.ReadFile(filepath.Join(campaignDir, rel, ResultFile))
	}
	rel := base
	existing, err := held(rel)
	if err == nil && !bytes.Equal(existing, a.raw) {
		rel = base + "-" + a.digest[:12]
		existing, err = held(rel)
	}
	if err == nil && bytes.Equal(existing, a.raw) {
		m.Skipped = append(m.Skipped, filepath.ToSlash(rel))
		return nil, nil
	}
	dst := filepath.Join(campaignDir, rel)
	warnings, err := copyTree(a.dir, dst)
	if err != nil {
		return nil, err
	}
	m.Warnings = append(m.Warnings, warnings...)
	m.Copied = append(m.Copied, filepath.ToSlash(rel))
	m.placed[rel] = a.raw
	return &pendingResult{path: filepath.Join(dst, ResultFile), raw: a.raw}, nil
}

// pendingResult is a copied attempt's result.json, written after its evidence.
type pendingResult struct {
	path string
	raw  []byte
}

// writeResults makes the copied evidence under campaignDir durable (one sync of its
// file system), then writes every pending result.json through the evidence guard
// (atomically, without an fsync each) and syncs once more: an attempt is never seen
// complete before its evidence is, and a merge of many attempts costs two syncs, not
// two fsyncs per file.
func (m *Merged) writeResults(campaignDir string, pending []*pendingResult) error {
	if len(pending) == 0 {
		return nil
	}
	if err := atomicfile.SyncFilesystem(campaignDir); err != nil {
		return err
	}
	for _, p := range pending {
		warnings, err := guardCopy(Guard{Deferred: true}, p.raw, p.path, ResultFile)
		m.Warnings = append(m.Warnings, warnings...)
		if err != nil {
			return fmt.Errorf("copying %s: %w", p.path, err)
		}
	}
	return atomicfile.SyncFilesystem(campaignDir)
}

// guardCopy writes b to target through guard, turning what the guard found into
// warnings about rel: a leak redacted, or a file left out.
func guardCopy(guard Guard, b []byte, target, rel string) ([]string, error) {
	var warnings []string
	gf, err := guard.Write(target, b, true)
	for _, l := range gf.Leaks {
		warnings = append(warnings, fmt.Sprintf("%s: secret leak (%s): redacted while copying", filepath.ToSlash(rel), l))
	}
	if errors.Is(err, ErrNotAllowed) || gf.Withheld {
		return append(warnings, fmt.Sprintf("%s: not copied: %v", filepath.ToSlash(rel), err)), nil
	}
	return warnings, err
}

// copyTree copies the regular files and directories of attempt directory src to dst
// (created), except its result.json, skipping symbolic links and special files, every
// file through the evidence guard (Guard with no secret set: the allowlist and secret
// shapes; a file it refuses is left out and named in a warning), without an fsync:
// Merge makes them durable together before any result.json is written.
func copyTree(src, dst string) ([]string, error) {
	var warnings []string
	guard := Guard{Deferred: true}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case !d.Type().IsRegular(), rel == ResultFile:
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		w, err := guardCopy(guard, b, target, rel)
		warnings = append(warnings, w...)
		return err
	})
	if err != nil {
		return warnings, fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	return warnings, nil
}
