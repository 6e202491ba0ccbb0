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
	"strings"
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
	// directory named attempt-… is an attempt, except inside an attempt's logs or
	// snapshots (its evidence, copied with it).
	Sources []string
	// ResultsRoot and CampaignID name the target campaign directory. An empty
	// CampaignID is taken from the results when they all agree.
	ResultsRoot string
	CampaignID  string
	// Claim, when set, is called with the target campaign directory before anything is
	// copied into it; its error stops the merge and is returned as it is.
	Claim func(campaignDir string) error
	// SyncLater leaves the last sync of the merge to the caller: when Merge returns,
	// every copied result.json is in place (written, as always, only after the evidence
	// of every copied attempt was made durable) but not yet durable itself. The caller
	// must then sync the campaign directory's file system (atomicfile.SyncFilesystem)
	// before it calls the merge done: report.Generate's commit does, before it puts the
	// campaign's files in place, so a merge reported right after costs one sync less.
	SyncLater bool
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
	stat   os.FileInfo // of the result.json raw was read from
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
//
// A file the guard leaves byte for byte is hard-linked instead of copied when the
// source is on the target's file system, has the mode FileMode and belongs to the
// merging user (see evidenceCopier): the merged campaign then shares those files with
// the shard directories, which is safe because evidence is never written in place —
// every writer replaces a file whole (atomicfile) — and shard directories are not
// changed once run. Attempts are copied in parallel; the outcome does not depend on
// the order.
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
	var jobs []*copyJob
	for _, a := range found {
		if j := m.place(campaignDir, a); j != nil {
			jobs = append(jobs, j)
		}
	}
	c, err := newEvidenceCopier(campaignDir)
	if err != nil {
		return nil, err
	}
	if err := m.copyAll(c, jobs); err != nil {
		return nil, err
	}
	if err := m.writeResults(c, campaignDir, jobs, !opts.SyncLater); err != nil {
		return nil, err
	}
	return m, nil
}

// findAttempts reads every attempt record (a result.json in a directory named
// attempt-…, not inside an attempt's logs or snapshots) under the sources: each with a
// valid execution id and attempt, and the set of valid campaign ids they name. The
// sources are walked several at a time, then the records read and decoded several at
// a time; both are kept in the sources' walk order. A record that does not decode, or
// names no valid execution id and attempt, is skipped with a warning in m (in that
// order). Errors: a source that is not a directory or cannot be walked, a record that
// cannot be read (the first in that order).
func findAttempts(sources []string, m *Merged) ([]sourceAttempt, map[string]bool, error) {
	for _, src := range sources {
		st, err := os.Stat(src)
		if err != nil {
			return nil, nil, fmt.Errorf("merge source: %w", err)
		}
		if !st.IsDir() {
			return nil, nil, fmt.Errorf("merge source %s is not a directory", src)
		}
	}
	perSource := make([][]string, len(sources))
	err := parallel(len(sources), func(i int) error {
		var err error
		if perSource[i], err = attemptRecords(sources[i]); err != nil {
			return fmt.Errorf("reading merge source %s: %w", sources[i], err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	records := slices.Concat(perSource...)
	read := make([]sourceAttempt, len(records))
	warnings := make([]string, len(records))
	err = parallel(len(records), func(i int) error {
		var err error
		if read[i], warnings[i], err = readAttemptRecord(records[i]); err != nil {
			return fmt.Errorf("reading merge source record %s: %w", records[i], err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	var found []sourceAttempt
	campaigns := map[string]bool{}
	for i, a := range read {
		if warnings[i] != "" {
			m.Warnings = append(m.Warnings, warnings[i])
			continue
		}
		found = append(found, a)
		if validCampaignID(a.result.CampaignID) {
			campaigns[a.result.CampaignID] = true
		}
	}
	return found, campaigns, nil
}

// attemptRecords walks the directory src and returns the paths of its attempt records
// in walk order; an attempt's evidence (logs, snapshots) is not walked. Error: src
// cannot be walked.
func attemptRecords(src string) ([]string, error) {
	var records []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case isAttemptEvidence(p, d):
			return fs.SkipDir // copied with its attempt, never an attempt itself
		case isAttemptRecord(p, d):
			records = append(records, p)
		}
		return nil
	})
	return records, err
}

// readAttemptRecord reads the attempt record (result.json) at p: the attempt, or a
// warning saying why it is skipped (it does not decode, or names no valid execution
// id and attempt). Error: p cannot be read.
func readAttemptRecord(p string) (sourceAttempt, string, error) {
	raw, st, err := readFileStat(p)
	if err != nil {
		return sourceAttempt{}, "", err
	}
	var r Result
	if err := json.Unmarshal(raw, &r); err != nil {
		return sourceAttempt{}, fmt.Sprintf("skipped %s: not a result document: %v", p, err), nil
	}
	if _, _, _, _, ok := ParseExecutionID(r.ExecutionID); !ok || r.Attempt < 1 {
		return sourceAttempt{}, fmt.Sprintf("skipped %s: no valid executionId and attempt", p), nil
	}
	sum := sha256.Sum256(raw)
	return sourceAttempt{dir: filepath.Dir(p), result: &r, digest: hex.EncodeToString(sum[:]), raw: raw, stat: st}, "", nil
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
