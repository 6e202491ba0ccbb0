package campaign

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentproof/agentproof/atomicfile"
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
// definition hash (catalog fingerprint) of its suite when the campaign started.
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
}

// PlannedCell is one selected cell of a PlanRecord.
type PlannedCell struct {
	ExecutionID         string `json:"executionId"`
	SuiteDefinitionHash string `json:"suiteDefinitionHash"`
}

// Record is p's plan record.
func (p *Plan) Record() PlanRecord {
	r := PlanRecord{Schema: PlanSchema, CampaignID: p.CampaignID, Repeat: p.Repeat, Seed: p.seed, Cells: []PlannedCell{}, Catalog: p.CatalogSources, Shard: p.Shard}
	for _, c := range p.Cells {
		r.Cells = append(r.Cells, PlannedCell{ExecutionID: c.ID, SuiteDefinitionHash: c.Suite.Fingerprint})
	}
	return r
}

// WritePlanRecord writes p's plan record to root/<campaign>/plan.json atomically
// (atomicfile, the directory made when missing). It holds ids and hashes only, never a secret. Errors: an
// encoding or a write failure, with the path.
func WritePlanRecord(root string, p *Plan) error {
	b, err := json.MarshalIndent(p.Record(), "", "  ")
	if err != nil {
		return fmt.Errorf("campaign: encoding %s: %w", PlanFile, err)
	}
	return atomicfile.WriteFile(filepath.Join(root, p.CampaignID, PlanFile), append(b, '\n'), result.FileMode, atomicfile.MakeDirs())
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
	// are kept.
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
// its plan.json, selects the same cells from c (each must exist and its suite must
// have the definition hash it had, or the stored results would not be comparable),
// with the recorded repetitions and seed (opts.Seed, when set, wins; opts.Repeat must
// be 0 or the recorded one), reads the stored results (result.ChooseRepeated) and
// splits every repetition into Kept (by mode) or a Unit to run whose first attempt
// comes after the highest attempt-<n> directory the repetition holds, so nothing
// stored is overwritten. Errors: *ResumeError and the errors of NewPlan.
func ResumePlan(c *catalog.Catalog, root string, mode ResumeMode, opts Options) (*Plan, error) {
	dir := filepath.Join(root, opts.CampaignID)
	rec, err := readPlanRecord(dir, mode)
	if err != nil {
		return nil, &ResumeError{CampaignDir: dir, Mode: mode, Problems: []string{err.Error()}}
	}
	var problems []string
	ids := make([]string, 0, len(rec.Cells))
	for _, pc := range rec.Cells {
		cell := c.Cell(pc.ExecutionID)
		switch {
		case cell == nil:
			problems = append(problems, fmt.Sprintf("cell %s is not in the catalog", pc.ExecutionID))
		case cell.Suite.Fingerprint != pc.SuiteDefinitionHash:
			problems = append(problems, fmt.Sprintf("suite %s of cell %s changed since the campaign started (definition hash %s, now %s): start a new campaign", cell.Suite.ID, pc.ExecutionID, pc.SuiteDefinitionHash, cell.Suite.Fingerprint))
		}
		ids = append(ids, pc.ExecutionID)
	}
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
	cands, err := result.LoadCandidates(dir)
	if err != nil {
		return nil, &ResumeError{CampaignDir: dir, Mode: mode, Problems: []string{err.Error()}}
	}
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
		if i := u.Repetition - 1; i < len(outs) && keep(mode, outs[i]) {
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

// keep reports whether a stored repetition's outcome is kept in mode.
func keep(mode ResumeMode, o result.RepetitionOutcome) bool {
	if o.Missing {
		return false
	}
	return mode == Resume || o.Counted == verdict.Passed
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
	return &r, nil
}
