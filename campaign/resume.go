package campaign

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentproof/agentproof/atomicfile"
	"github.com/agentproof/agentproof/canonjson"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// PlanFile is the name of a campaign's plan record at its root (<results>/<campaign>/),
// written by `agentproof run` before the first attempt starts, so that a campaign
// interrupted or killed before its report still says what it selected.
const PlanFile = "plan.json"

// PlanSchema tags a plan record.
const PlanSchema = "agentproof.plan/v1"

// PlanRecord is plan.json: the campaign id, its repetitions per cell, the seed of its
// nonces (null: random), the catalog it was started with and the selected cells in plan order, each with the
// definition hash (catalog fingerprint) of its suite when the campaign started, the
// definition of every selected suite (what the hash is the SHA-256 of), the
// definition boundaries a resume started, and the record's digest.
type PlanRecord struct {
	Schema     string        `json:"schema"`
	CampaignID string        `json:"campaignId"`
	Repeat     int           `json:"repeat"`
	Seed       *int64        `json:"seed"`
	Cells      []PlannedCell `json:"cells"`
	// Catalog is the catalog the campaign was started with (Plan.CatalogSources; nil
	// when not recorded).
	Catalog *result.CatalogSources `json:"catalog,omitempty"`
	// Shard says which shard of a shard plan the campaign runs (`run --shard`); nil for
	// a campaign that is not a shard.
	Shard *result.ShardRef `json:"shard,omitempty"`
	// Definitions are the selected suites' definitions (catalog.Suite.FingerprintJSON)
	// with their hashes, in plan order: what a resume compares the catalog's with, to
	// name the first field that changed.
	Definitions []SuiteDefinition `json:"definitions,omitempty"`
	// Boundaries are the definition changes a resume with --new-definition started.
	Boundaries []DefinitionBoundary `json:"boundaries,omitempty"`
	// Digest is the SHA-256 of the record with an empty digest (canonjson.Sorted),
	// written last: a record that does not hash to it was edited after `run` wrote it.
	Digest string `json:"digest,omitempty"`
}

// SuiteDefinition is one suite's definition in a PlanRecord: its id, its definition
// hash and the definition itself (the JSON the hash is the SHA-256 of).
type SuiteDefinition struct {
	SuiteID    string          `json:"suiteId"`
	Hash       string          `json:"hash"`
	Definition json.RawMessage `json:"definition"`
}

// DefinitionBoundary is a suite definition that changed while a campaign was resumed
// with --new-definition: the suite, its hash before and after, and what changed first
// (catalog.DefinitionChange).
type DefinitionBoundary struct {
	SuiteID string `json:"suiteId"`
	Was     string `json:"was"`
	Now     string `json:"now"`
	Change  string `json:"change"`
}

// PlannedCell is one selected cell of a PlanRecord.
type PlannedCell struct {
	ExecutionID         string `json:"executionId"`
	SuiteDefinitionHash string `json:"suiteDefinitionHash"`
}

// Record is p's plan record.
func (p *Plan) Record() PlanRecord {
	r := PlanRecord{Schema: PlanSchema, CampaignID: p.CampaignID, Repeat: p.Repeat, Seed: p.seed, Cells: []PlannedCell{}, Catalog: p.CatalogSources, Shard: p.Shard,
		Boundaries: p.Boundaries}
	seen := map[string]bool{}
	for _, c := range p.Cells {
		r.Cells = append(r.Cells, PlannedCell{ExecutionID: c.ID, SuiteDefinitionHash: c.Suite.Fingerprint})
		if !seen[c.Suite.ID] {
			seen[c.Suite.ID] = true
			def, err := c.Suite.FingerprintJSON()
			if err != nil || canonjson.SHA256Hex(def) != c.Suite.Fingerprint {
				continue // not a loaded suite's (whose fingerprint is made of its definition)
			}
			r.Definitions = append(r.Definitions, SuiteDefinition{SuiteID: c.Suite.ID, Hash: c.Suite.Fingerprint, Definition: def})
		}
	}
	return r
}

// digest is the SHA-256 of r with an empty Digest (canonjson.Sorted of its JSON).
func (r PlanRecord) digest() (string, error) {
	r.Digest = ""
	b, err := canonjson.Sorted(r)
	if err != nil {
		return "", err
	}
	return canonjson.SHA256Hex(b), nil
}

// WritePlanRecord writes p's plan record to root/<campaign>/plan.json atomically
// (atomicfile, the directory made when missing), with its digest. It holds ids, hashes
// and the suites' definitions (declarations, whose secrets are references), never a
// secret. Errors: an encoding or a write failure, with the path.
func WritePlanRecord(root string, p *Plan) error {
	rec := p.Record()
	d, err := rec.digest()
	if err != nil {
		return fmt.Errorf("campaign: encoding %s: %w", PlanFile, err)
	}
	rec.Digest = d
	// Not HTML-escaped, so that a definition keeps its exact bytes (only indented).
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rec); err != nil {
		return fmt.Errorf("campaign: encoding %s: %w", PlanFile, err)
	}
	return atomicfile.WriteFile(filepath.Join(root, p.CampaignID, PlanFile), b.Bytes(), result.FileMode, atomicfile.MakeDirs())
}

// ResumeMode says which repetitions of a stored campaign run again.
type ResumeMode int

const (
	// Resume (`run --resume`) runs the repetitions without a valid result: those that
	// never started, and those killed or interrupted mid-attempt (which keep their
	// evidence but have no result.json). Every stored result is kept.
	Resume ResumeMode = iota + 1
	// RerunFailed (`run --rerun-failed`) runs again the repetitions whose chosen
	// result does not count as passed (failed, inconclusive or missing); passed ones
	// are kept, and so are known failures (a cell that ended as its entry in the
	// catalog's baseline of known failures expects: the campaign does not count it as
	// failed).
	RerunFailed
)

// ResumeError is a campaign that cannot be resumed as asked (no plan record, a cell
// the catalog no longer has, a suite whose definition changed); commands map it to
// exit code 2 before anything starts. Problems lists every one.
type ResumeError struct {
	CampaignDir string
	Mode        ResumeMode
	Problems    []string
}

// Error names what was asked (resume, or rerun the failed cells), the campaign
// directory and every problem.
func (e *ResumeError) Error() string {
	return fmt.Sprintf("cannot %s the campaign in %s: %s", e.Mode.verb(), e.CampaignDir, strings.Join(e.Problems, "; "))
}

// verb is what the mode does, for messages: "resume", "rerun the failed cells of".
func (m ResumeMode) verb() string {
	if m == RerunFailed {
		return "rerun the failed cells of"
	}
	return "resume"
}

// ResumePlan plans the rest of the campaign stored in root/<opts.CampaignID>: it reads
// its plan.json (refusing one edited since `run` wrote it), selects the same cells from
// c (each must exist and its suite must have the definition it had — or, with
// opts.NewDefinition, the changed suite starts a new definition: a boundary —, so that
// stored results of two definitions are never mixed), with the recorded repetitions
// and seed (opts.Seed, when set, wins; opts.Repeat must be 0 or the recorded one),
// reads the stored results of the current definitions (result.ChooseRepeated; a result
// of another definition is never kept) and splits every repetition into Kept (by mode)
// or a Unit to run whose first attempt comes after the highest attempt-<n> directory
// the repetition holds, so nothing stored is overwritten. Errors: *ResumeError (a
// changed suite named with the first field that changed) and the errors of NewPlan.
func ResumePlan(c *catalog.Catalog, root string, mode ResumeMode, opts Options) (*Plan, error) {
	dir := filepath.Join(root, opts.CampaignID)
	rec, err := readPlanRecord(dir, mode)
	if err != nil {
		return nil, &ResumeError{CampaignDir: dir, Mode: mode, Problems: []string{err.Error()}}
	}
	ids, boundaries, problems := recordedCells(c, rec, opts.NewDefinition)
	if opts.Repeat != 0 && opts.Repeat != rec.Repeat {
		problems = append(problems, fmt.Sprintf("--repeat %d differs from the campaign's %d", opts.Repeat, rec.Repeat))
	}
	if len(ids) == 0 {
		problems = append(problems, PlanFile+" selects no cell")
	}
	if len(problems) > 0 {
		return nil, &ResumeError{CampaignDir: dir, Mode: mode, Problems: problems}
	}
	opts.Repeat = rec.Repeat
	if opts.Seed == nil {
		opts.Seed = rec.Seed
	}
	p, err := NewPlan(c, catalog.Selector{IDs: ids}, opts)
	if err != nil {
		return nil, err
	}
	p.Boundaries, p.recorded = append(slices.Clone(rec.Boundaries), boundaries...), len(rec.Boundaries)
	cands, err := result.LoadCandidates(dir)
	if err != nil {
		return nil, &ResumeError{CampaignDir: dir, Mode: mode, Problems: []string{err.Error()}}
	}
	cands = slices.DeleteFunc(cands, func(cd result.Candidate) bool {
		if !cd.Valid() {
			return false
		}
		cell := c.Cell(cd.Result.ExecutionID)
		return cell != nil && cd.Result.SuiteDefinitionHash != cell.Suite.Fingerprint
	})
	results, _, _, repeats := result.ChooseRepeated(c, p.CampaignID, ids, cands, p.Repeat)
	counted := map[string][]result.RepetitionOutcome{}
	class := map[string]verdict.FailureClass{}
	for _, r := range results {
		class[r.ExecutionID] = r.FailureClass
		o := result.RepetitionOutcome{Repetition: 1, Attempt: r.Attempt, Verdict: r.Verdict, Counted: result.Outcome(&r), Missing: r.Synthetic}
		counted[r.ExecutionID] = []result.RepetitionOutcome{o}
	}
	for _, rp := range repeats {
		counted[rp.ExecutionID] = rp.Outcomes
	}
	units := p.Units
	p.Units, p.resumed, p.CatalogSources = nil, true, rec.Catalog
	for _, u := range units {
		outs := counted[u.Cell.ID]
		if i := u.Repetition - 1; i < len(outs) && keep(mode, outs[i], class[u.Cell.ID], u.Cell.KnownFailure) {
			p.Kept = append(p.Kept, Kept{Cell: u.Cell, Repetition: u.Repetition, Counted: outs[i].Counted, Class: class[u.Cell.ID]})
			continue
		}
		last, err := highestAttempt(filepath.Join(dir, p.RepetitionDir(u.Cell, u.Repetition)))
		if err != nil {
			return nil, &ResumeError{CampaignDir: dir, Mode: mode, Problems: []string{err.Error()}}
		}
		u.FirstAttempt = last + 1
		p.Units = append(p.Units, u)
	}
	return p, nil
}

// keep reports whether a stored repetition's outcome is kept in mode: by Resume
// whenever it has a result; by RerunFailed when it passed or is a known failure
// (result.StateFor with class, its judgement's failure class, and k, the cell's entry
// in the baseline of known failures, nil for none).
func keep(mode ResumeMode, o result.RepetitionOutcome, class verdict.FailureClass, k *catalog.KnownFailure) bool {
	if o.Missing {
		return false
	}
	if mode == Resume || o.Counted == verdict.Passed {
		return true
	}
	return k != nil && result.StateFor(o.Counted, class, k.Expected) == result.StateKnownFailure
}

// highestAttempt is the highest n of the attempt-<n> directories in dir (0 when there
// are none or dir does not exist).
func highestAttempt(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", dir, err)
	}
	high := 0
	for _, e := range entries {
		if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "attempt-")); err == nil && e.IsDir() && strings.HasPrefix(e.Name(), "attempt-") {
			high = max(high, n)
		}
	}
	return high, nil
}

// recordedCells checks the cells rec selected against c: each must be a cell of c and
// its suite's definition the recorded one. A suite whose definition changed is a
// problem naming the first field that changed (catalog.DefinitionChange, when rec has
// the definition) — or, with newDefinition, a boundary. It returns the cells' ids.
func recordedCells(c *catalog.Catalog, rec *PlanRecord, newDefinition bool) ([]string, []DefinitionBoundary, []string) {
	defs := map[string]json.RawMessage{}
	for _, d := range rec.Definitions {
		defs[d.SuiteID] = d.Definition
	}
	var problems []string
	var boundaries []DefinitionBoundary
	seen := map[string]bool{}
	ids := make([]string, 0, len(rec.Cells))
	for _, pc := range rec.Cells {
		ids = append(ids, pc.ExecutionID)
		cell := c.Cell(pc.ExecutionID)
		switch {
		case cell == nil:
			problems = append(problems, fmt.Sprintf("cell %s is not in the catalog", pc.ExecutionID))
			continue
		case cell.Suite.Fingerprint == pc.SuiteDefinitionHash || seen[cell.Suite.ID]:
			continue
		}
		seen[cell.Suite.ID] = true
		change := "its definition hash was " + pc.SuiteDefinitionHash + ", now " + cell.Suite.Fingerprint
		if was, ok := defs[cell.Suite.ID]; ok {
			if now, err := cell.Suite.FingerprintJSON(); err == nil {
				change = "first change: " + catalog.DefinitionChange(was, now)
			}
		}
		if newDefinition {
			boundaries = append(boundaries, DefinitionBoundary{SuiteID: cell.Suite.ID, Was: pc.SuiteDefinitionHash, Now: cell.Suite.Fingerprint, Change: change})
			continue
		}
		problems = append(problems, fmt.Sprintf("suite %s changed since the campaign started (%s): its stored results would be mixed with results of another definition; "+
			"start a new campaign, or pass --new-definition to start the new definition in this one (every cell of the suite runs again)", cell.Suite.ID, change))
	}
	return ids, boundaries, problems
}

// readPlanRecord reads and checks dir/plan.json.
func readPlanRecord(dir string, mode ResumeMode) (*PlanRecord, error) {
	path := filepath.Join(dir, PlanFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s does not exist: only a campaign started by 'agentproof run' (which writes it first) can be %s", path, map[ResumeMode]string{Resume: "resumed", RerunFailed: "rerun"}[mode])
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var r PlanRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Schema != PlanSchema {
		return nil, fmt.Errorf("%s: schema %q, want %q", path, r.Schema, PlanSchema)
	}
	if r.Repeat < 1 || r.Repeat > MaxRepeat {
		return nil, fmt.Errorf("%s: repeat %d is not between 1 and %d", path, r.Repeat, MaxRepeat)
	}
	if dirID := filepath.Base(dir); r.CampaignID != dirID {
		return nil, fmt.Errorf("%s: campaign id %q is not the directory's %q", path, r.CampaignID, dirID)
	}
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// check finds a record that was edited after `run` wrote it: a digest its content does
// not hash to, a definition that does not hash to its hash, a cell whose hash is not
// its suite's recorded one. A record without a digest (written before plan records had
// one) is not checked.
func (r *PlanRecord) check() error {
	if r.Digest == "" {
		return nil
	}
	if d, err := r.digest(); err != nil || d != r.Digest {
		return fmt.Errorf("was edited after agentproof run wrote it: its content hashes to %s, not to its digest %s (start a new campaign)", d, r.Digest)
	}
	hashes := map[string]string{}
	for i, d := range r.Definitions {
		var compact bytes.Buffer
		if err := json.Compact(&compact, d.Definition); err != nil {
			return fmt.Errorf("the definition of suite %s is not JSON: %w", d.SuiteID, err)
		}
		r.Definitions[i].Definition = compact.Bytes()
		if h := canonjson.SHA256Hex(compact.Bytes()); h != d.Hash {
			return fmt.Errorf("the definition of suite %s hashes to %s, not to its recorded %s (start a new campaign)", d.SuiteID, h, d.Hash)
		}
		hashes[d.SuiteID] = d.Hash
	}
	for _, c := range r.Cells {
		if h, ok := hashes[suiteOf(c.ExecutionID, r.Definitions)]; ok && h != c.SuiteDefinitionHash {
			return fmt.Errorf("cell %s has definition hash %s, its suite's recorded definition %s (start a new campaign)", c.ExecutionID, c.SuiteDefinitionHash, h)
		}
	}
	return nil
}

// suiteOf is the id of the recorded suite whose cell execution id is (the longest id
// that prefixes it), "" for none.
func suiteOf(id string, defs []SuiteDefinition) string {
	best := ""
	for _, d := range defs {
		if strings.HasPrefix(id, d.SuiteID+".") && len(d.SuiteID) > len(best) {
			best = d.SuiteID
		}
	}
	return best
}
