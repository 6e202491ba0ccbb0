package shard

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/result"
)

// Against checks that p can run with catalog c: every suite of the plan is in c with
// the same definition hash and every cell of the plan is a cell of c. The error lists
// every difference, naming the suite (with both hashes) or the cell.
func (p *Plan) Against(c *catalog.Catalog) error {
	var problems []string
	for _, s := range p.Suites {
		cs := c.Suite(s.SuiteID)
		switch {
		case cs == nil:
			problems = append(problems, fmt.Sprintf("suite %s is not in the catalog", s.SuiteID))
		case cs.Fingerprint != s.DefinitionHash:
			problems = append(problems, fmt.Sprintf("suite %s has definition hash %s in the catalog, %s in the plan", s.SuiteID, cs.Fingerprint, s.DefinitionHash))
		}
	}
	for _, id := range p.AllIDs() {
		if c.Cell(id) == nil {
			problems = append(problems, fmt.Sprintf("cell %s is not in the catalog", id))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("the shard plan %s does not match this catalog: %s", p.Fingerprint, strings.Join(problems, "; "))
	}
	return nil
}

// Run is a shard run found among merge sources: the campaign directory whose plan
// record says it ran shard Ref of a plan.
type Run struct {
	Dir string
	Ref result.ShardRef
}

// FindRuns walks sources for files named planFile (the plan record `agentproof run`
// writes at a campaign's root), not looking into attempt directories (attempt-…: an
// attempt's evidence, where such a file is never a run's), and returns those that
// record a shard, sorted by directory. A plan record that does not decode is skipped; a source that cannot be
// walked is an error.
func FindRuns(sources []string, planFile string) ([]Run, error) {
	var runs []Run
	for _, src := range sources {
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && strings.HasPrefix(d.Name(), "attempt-") {
				return fs.SkipDir // an attempt's evidence: a run's plan is never in it
			}
			if d.IsDir() || d.Name() != planFile {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			var rec struct {
				Shard *result.ShardRef `json:"shard"`
			}
			if json.Unmarshal(b, &rec) == nil && rec.Shard != nil {
				runs = append(runs, Run{Dir: filepath.Dir(p), Ref: *rec.Shard})
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading merge source %s: %w", src, err)
		}
	}
	slices.SortFunc(runs, func(a, b Run) int { return strings.Compare(a.Dir, b.Dir) })
	return runs, nil
}

// Foreign are the runs that belong to another plan than fingerprint ("" : the
// fingerprint of the first run), each described with its directory and fingerprint;
// nil when every run is of the same plan.
func Foreign(runs []Run, fingerprint string) []string {
	var out []string
	for _, r := range runs {
		if fingerprint == "" {
			fingerprint = r.Ref.Fingerprint
		}
		if r.Ref.Fingerprint != fingerprint {
			out = append(out, fmt.Sprintf("%s ran shard %d/%d of plan %s, not of plan %s", r.Dir, r.Ref.Index, r.Ref.Count, r.Ref.Fingerprint, fingerprint))
		}
	}
	return out
}

// Gap is what a merge lacks of a plan: a shard with cells without a result, its
// index, whether no run of it was found at all, and those cells (sorted).
type Gap struct {
	Index   int
	NoRun   bool
	Missing []string
}

// Gaps compares p with what was merged: runs (the shard runs found) and have (the
// execution ids that got a real result). Shards are in index order.
func (p *Plan) Gaps(runs []Run, have map[string]bool) []Gap {
	ran := map[int]bool{}
	for _, r := range runs {
		if r.Ref.Fingerprint == p.Fingerprint {
			ran[r.Ref.Index] = true
		}
	}
	var gaps []Gap
	for _, s := range p.Shards {
		g := Gap{Index: s.Index, NoRun: !ran[s.Index]}
		for _, c := range s.Cells {
			if !have[c.ExecutionID] {
				g.Missing = append(g.Missing, c.ExecutionID)
			}
		}
		if len(g.Missing) > 0 {
			gaps = append(gaps, g)
		}
	}
	return gaps
}
