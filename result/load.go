package result

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/verdict"
)

// ResultFile is the name of an attempt's result record.
const ResultFile = "result.json"

// maxResultBytes bounds one result.json (bytes); a larger file is an invalid candidate.
const maxResultBytes = 32 << 20

// Candidate is one result.json found under a campaign directory. Dir is the attempt
// directory relative to the campaign directory (slash-separated). Result is nil when the
// file could not be decoded at all; Problems lists every validation problem (Valid ⇔
// none).
type Candidate struct {
	Dir      string
	Result   *Result
	Problems []string
}

// Valid reports whether the candidate decoded and validated without problems.
func (c *Candidate) Valid() bool { return c.Result != nil && len(c.Problems) == 0 }

// LoadCandidates walks campaignDir for attempt records: files named result.json whose
// directory is named "attempt-…" (so a result.json an agent left among the evidence is
// never mistaken for one; symbolic links are not followed), and decodes each strictly. A file that fails validation is still returned,
// with its problems, so that best-attempt selection can prefer valid attempts and
// report why the others were rejected. Candidates are sorted by Dir. The error is
// non-nil only when the directory cannot be walked.
func LoadCandidates(campaignDir string) ([]Candidate, error) {
	return loadCandidates(campaignDir, nil)
}

// loadCandidates is LoadCandidates calling keep, when non-nil, with every candidate as
// it is decoded (to keep less of it). The records are read and decoded several at a
// time (parallel), so keep must be safe for concurrent use.
func loadCandidates(campaignDir string, keep func(*Candidate)) ([]Candidate, error) {
	var paths, rels []string
	err := filepath.WalkDir(campaignDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if isAttemptEvidence(p, d) {
			return fs.SkipDir // an attempt's evidence: its record is beside it, never in it
		}
		if !isAttemptRecord(p, d) {
			return nil
		}
		rel, err := filepath.Rel(campaignDir, filepath.Dir(p))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil // a result.json at the campaign root is not an attempt
		}
		paths, rels = append(paths, p), append(rels, rel)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading results under %s: %w", campaignDir, err)
	}
	out := make([]Candidate, len(paths))
	_ = parallel(len(paths), func(i int) error {
		out[i] = decodeCandidate(paths[i], rels[i])
		if keep != nil {
			keep(&out[i])
		}
		return nil
	})
	slices.SortFunc(out, func(a, b Candidate) int { return strings.Compare(a.Dir, b.Dir) })
	return out, nil
}

// isAttemptEvidence reports whether p is an attempt's evidence directory (logs or
// snapshots in a directory named attempt-…), where an attempt record is never looked
// for: a result.json there is evidence (an agent's, perhaps), not an attempt.
func isAttemptEvidence(p string, d fs.DirEntry) bool {
	return d.IsDir() && (d.Name() == "logs" || d.Name() == "snapshots") && strings.HasPrefix(filepath.Base(filepath.Dir(p)), "attempt-")
}

// isAttemptRecord reports whether p is a regular file result.json in a directory named
// attempt-….
func isAttemptRecord(p string, d fs.DirEntry) bool {
	return !d.IsDir() && d.Name() == ResultFile && d.Type().IsRegular() &&
		strings.HasPrefix(filepath.Base(filepath.Dir(p)), "attempt-")
}

func decodeCandidate(p, rel string) Candidate {
	c := Candidate{Dir: rel}
	info, err := os.Stat(p)
	if err != nil {
		c.Problems = []string{err.Error()}
		return c
	}
	if info.Size() > maxResultBytes {
		c.Problems = []string{fmt.Sprintf("result.json is %d bytes, more than %d", info.Size(), maxResultBytes)}
		return c
	}
	b, err := os.ReadFile(p)
	if err != nil {
		c.Problems = []string{err.Error()}
		return c
	}
	r, err := DecodeResult(rel+"/"+ResultFile, b)
	var ve *ValidationError
	if errors.As(err, &ve) {
		c.Problems = ve.Problems
		// Keep what decoded, when it did, so that the note can name the cell.
		var loose Result
		if json.Unmarshal(b, &loose) == nil && loose.ExecutionID != "" {
			c.Result = &loose
		}
		return c
	}
	if err != nil {
		c.Problems = []string{err.Error()}
		return c
	}
	if r.Synthetic {
		c.Problems = []string{"synthetic results are never read back from result.json"}
	}
	c.Result = r
	return c
}

// better reports whether a is a better candidate than b for the same cell:
// valid first, then one of the definition hash current (the catalog's, "" when not
// known: a campaign resumed with --new-definition never mixes results of two
// definitions), then the latest finishedAt, then the higher attempt, then (for
// determinism) the smaller directory name.
func better(a, b *Candidate, current string) bool {
	if a.Valid() != b.Valid() {
		return a.Valid()
	}
	if a.Valid() && current != "" {
		if ca, cb := a.Result.SuiteDefinitionHash == current, b.Result.SuiteDefinitionHash == current; ca != cb {
			return ca
		}
	}
	if a.Valid() {
		if c := cmp.Compare(a.Result.FinishedAt, b.Result.FinishedAt); c != 0 {
			ta, _ := parseTime(a.Result.FinishedAt)
			tb, _ := parseTime(b.Result.FinishedAt)
			if !ta.Equal(tb) {
				return ta.After(tb)
			}
		}
		if a.Result.Attempt != b.Result.Attempt {
			return a.Result.Attempt > b.Result.Attempt
		}
	}
	return a.Dir < b.Dir
}

// Choose picks the best candidate for every expected execution id and makes up a
// synthetic result for each expected id without a valid candidate (see Synthetic). It
// returns the results sorted by execution id, one per expected id, the notes on every
// candidate of an expected id, and the execution ids found that were not expected
// (sorted; they are left out of the campaign). It is ChooseRepeated for a campaign
// without repeats.
func Choose(cat *catalog.Catalog, campaignID string, expected []string, cands []Candidate) ([]Result, []CandidateNote, []string) {
	results, notes, unexpected, _ := ChooseRepeated(cat, campaignID, expected, cands, 1)
	return results, notes, unexpected
}

// ChooseRepeated is Choose for a campaign whose cells ran repeat times (`run --repeat`):
// with repeat > 1 it picks the best candidate of every repetition 1..repeat of every
// expected id (a repetition without a valid one gets a synthetic result), and the
// cell's result is the first repetition, in order, whose outcome is the cell's
// (verdict.Repeated of the repetitions' outcomes), so that the campaign counts the
// cell as Repeated says. The Repeats list every cell's repetitions (sorted by
// execution id; nil when repeat ≤ 1).
func ChooseRepeated(cat *catalog.Catalog, campaignID string, expected []string, cands []Candidate, repeat int) ([]Result, []CandidateNote, []string, []Repeats) {
	results, notes, unexpected, repeats, _ := chooseRepeated(cat, campaignID, expected, cands, repeat)
	return results, notes, unexpected, repeats
}

// chooseRepeated is ChooseRepeated also returning, for every result, the directory of
// the candidate it came from ("" for a synthetic result).
func chooseRepeated(cat *catalog.Catalog, campaignID string, expected []string, cands []Candidate, repeat int) ([]Result, []CandidateNote, []string, []Repeats, []string) {
	want := map[string]bool{}
	for _, id := range expected {
		want[id] = true
	}
	type key struct {
		id  string
		rep int
	}
	byKey := map[key][]*Candidate{}
	var unexpected []string
	for i := range cands {
		c := &cands[i]
		id, rep := "", 0
		if c.Result != nil {
			id, rep = c.Result.ExecutionID, c.Result.Repetition
		}
		if !want[id] || (repeat <= 1 && rep > 1) || (repeat > 1 && rep > repeat) {
			if id == "" {
				id = "(undecodable " + c.Dir + "/" + ResultFile + ")"
			} else if rep > 0 && want[id] {
				id = fmt.Sprintf("%s repetition %d", id, rep)
			}
			if !slices.Contains(unexpected, id) {
				unexpected = append(unexpected, id)
			}
			continue
		}
		if repeat <= 1 {
			rep = 0
		} else {
			rep = max(rep, 1)
		}
		byKey[key{id, rep}] = append(byKey[key{id, rep}], c)
	}
	slices.Sort(unexpected)
	ids := slices.Clone(expected)
	slices.Sort(ids)
	results := make([]Result, 0, len(ids))
	sources := make([]string, 0, len(ids))
	var notes []CandidateNote
	var repeats []Repeats
	for _, id := range ids {
		if repeat <= 1 {
			r, n, src := pick(cat, campaignID, id, byKey[key{id, 0}], 0, 0)
			results, notes, sources = append(results, r), append(notes, n...), append(sources, src)
			continue
		}
		reps := make([]Result, 0, repeat)
		srcs := make([]string, 0, repeat)
		rp := Repeats{ExecutionID: id, Repetitions: repeat}
		var outcomes []verdict.Verdict
		for k := 1; k <= repeat; k++ {
			r, n, src := pick(cat, campaignID, id, byKey[key{id, k}], k, repeat)
			reps, notes, srcs = append(reps, r), append(notes, n...), append(srcs, src)
			o := Outcome(&r)
			outcomes = append(outcomes, o)
			rp.Outcomes = append(rp.Outcomes, RepetitionOutcome{Repetition: k, Attempt: r.Attempt, Verdict: r.Verdict, Counted: o, Missing: r.Synthetic})
			switch o {
			case verdict.Passed:
				rp.Passed++
			case verdict.Failed:
				rp.Failed++
			default:
				rp.Inconclusive++
			}
		}
		rp.Verdict, rp.Flaky = verdict.Repeated(outcomes...), verdict.Flaky(outcomes...)
		rp.PassAll, rp.PassAny = rp.Passed == repeat, rp.Passed > 0
		for i := range reps {
			if outcomes[i] == rp.Verdict {
				results, sources = append(results, reps[i]), append(sources, srcs[i])
				break
			}
		}
		repeats = append(repeats, rp)
	}
	return results, notes, unexpected, repeats, sources
}

// pick chooses the best of cs (candidates of one cell's repetition rep; rep 0: a
// campaign without repeats) and notes every candidate when there are several or one is
// invalid; without a valid candidate the result is synthetic.
func pick(cat *catalog.Catalog, campaignID, id string, cs []*Candidate, rep, repeat int) (Result, []CandidateNote, string) {
	current := ""
	if cat != nil {
		if cell := cat.Cell(id); cell != nil {
			current = cell.Suite.Fingerprint
		}
	}
	var best *Candidate
	for _, c := range cs {
		if best == nil || better(c, best, current) {
			best = c
		}
	}
	var notes []CandidateNote
	for _, c := range cs {
		attempt := 0
		if c.Result != nil {
			attempt = c.Result.Attempt
		}
		if len(cs) > 1 || !c.Valid() {
			var outcome verdict.Verdict
			if c.Valid() {
				outcome = Outcome(c.Result)
			}
			notes = append(notes, CandidateNote{ExecutionID: id, Repetition: rep, Dir: c.Dir, Attempt: attempt, Valid: c.Valid(), Chosen: c == best && c.Valid(), Outcome: outcome, Problems: c.Problems})
		}
	}
	if best == nil || !best.Valid() {
		reason := "no result.json was found for this cell"
		if rep > 0 {
			reason = fmt.Sprintf("no result.json was found for repetition %d of this cell", rep)
		}
		if best != nil {
			reason = fmt.Sprintf("no valid result.json: %s: %s", best.Dir, strings.Join(best.Problems, "; "))
		}
		r := Synthetic(cat, campaignID, id, reason)
		if rep > 0 {
			r.Repetition, r.Repeat = rep, repeat
		}
		return r, notes, ""
	}
	r := *best.Result
	r.Evidence = prefixEvidence(best.Dir, r.Evidence)
	r.Trajectories = prefixTrajectories(best.Dir, r.Trajectories)
	return r, notes, best.Dir
}

// prefixEvidence rewrites evidence paths relative to the campaign directory, so the
// dashboard and summaries can link them.
func prefixEvidence(dir string, files []string) []string {
	out := make([]string, 0, len(files))
	for _, f := range files {
		out = append(out, dir+"/"+f)
	}
	return out
}

// Synthetic is the result recorded for an expected cell that left no valid result
// (a synthetic result, with agentproof's verdicts rather than a failure): attempt
// 0, verdict inconclusive with class permanent_infrastructure (the evidence is missing,
// which docs/ARCHITECTURE.md "Verdicts" makes inconclusive, never passed), cleanup not_started, the
// given reason as its error. Its suite hash is the catalog's when the catalog knows the
// suite; provider and model come from the catalog cell when known.
func Synthetic(cat *catalog.Catalog, campaignID, id, reason string) Result {
	s, p, e, c, _ := ParseExecutionID(id)
	r := Result{
		Schema: ResultSchema, ExecutionID: id, CampaignID: campaignID,
		SuiteID: s, ProfileID: p, EnvironmentID: e, CaseID: c,
		Verdict: verdict.Inconclusive, FailureClass: verdict.PermanentInfrastructure,
		Error:   reason,
		Cleanup: CleanupNotStarted, RunIDs: []string{}, MatcherResults: []MatcherResult{}, Evidence: []string{},
		Synthetic: true,
	}
	if cat != nil {
		if cell := cat.Cell(id); cell != nil {
			r.Provider, r.Model = cell.Profile.Provider, cell.Profile.Model
			r.RuntimeMode = cell.Profile.Generation
			r.ExpectedVerdict = verdict.Verdict(cell.ExpectedVerdict)
		}
		if suite := cat.Suite(s); suite != nil {
			r.SuiteDefinitionHash = suite.Fingerprint
		}
	}
	if r.SuiteDefinitionHash == "" {
		r.SuiteDefinitionHash = "unknown"
	}
	return r
}
