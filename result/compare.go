package result

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/verdict"
)

// Change is how one cell changed from a baseline campaign (A) to a later one (B)
// (`agentproof compare A B`), by the cells' outcomes (Outcome: the one counted rule).
type Change string

// The changes, in the order Compare reports them.
const (
	// Regressed: the cell passed in A and failed in B. The only change that makes
	// compare exit 1.
	Regressed Change = "regressed"
	// Fixed: the cell did not pass in A (failed or inconclusive) and passed in B.
	Fixed Change = "fixed"
	// StillFailing: the cell did not pass in A and failed in B.
	StillFailing Change = "still_failing"
	// NowInconclusive: the cell is inconclusive in B (its evidence is incomplete, so
	// it is no regression, whatever A said).
	NowInconclusive Change = "inconclusive"
	// ChangeKnownFailure: the cell is a known failure in B (StateKnownFailure: it ended as
	// its entry in the baseline of known failures expects); no regression.
	ChangeKnownFailure Change = "known_failure"
	// ChangeUnexpectedPass: the cell is a known failure that passed in B
	// (StateUnexpectedPass): its baseline entry is stale.
	ChangeUnexpectedPass Change = "unexpected_pass"
	// ChangeNotRunHere: B did not run the cell (its machine could not provide the
	// cell's environment): no outcome to compare, never a regression nor a fix.
	ChangeNotRunHere Change = "not_run_here"
	// DefinitionChanged: the cell's suite has another definition hash in B than in A:
	// a boundary, not comparable, never a regression.
	DefinitionChanged Change = "definition_changed"
	// New: the cell is only in B, or A has it as not run here (NotRunBefore says why):
	// nothing in A to compare with.
	New Change = "new"
	// Removed: the cell is only in A.
	Removed Change = "removed"
	// StillPassing: the cell passed in both.
	StillPassing Change = "still_passing"
)

// Changes lists every Change in report order.
var Changes = []Change{Regressed, Fixed, StillFailing, NowInconclusive, ChangeUnexpectedPass, ChangeKnownFailure, ChangeNotRunHere, DefinitionChanged, New, Removed, StillPassing}

// CellChange is one cell of a Comparison: its execution id, its change, its outcome in
// A and in B ("" when absent) with, for a cell of the baseline of known failures, its
// state (known failure or unexpected pass; "" otherwise), B's (else A's) failure class
// and reason, for a cell A did not run here why it did not (NotRunBefore), and, for a
// definition change, both suite hashes.
type CellChange struct {
	ExecutionID  string               `json:"executionId"`
	Change       Change               `json:"change"`
	Before       verdict.Verdict      `json:"before,omitempty"`
	After        verdict.Verdict      `json:"after,omitempty"`
	StateBefore  CellState            `json:"stateBefore,omitempty"`
	StateAfter   CellState            `json:"stateAfter,omitempty"`
	FailureClass verdict.FailureClass `json:"failureClass,omitempty"`
	Reason       string               `json:"reason,omitempty"`
	NotRunBefore string               `json:"notRunBefore,omitempty"`
	HashBefore   string               `json:"hashBefore,omitempty"`
	HashAfter    string               `json:"hashAfter,omitempty"`
}

// SuiteChange is a suite present in both campaigns whose definition hash differs.
type SuiteChange struct {
	SuiteID    string `json:"suiteId"`
	HashBefore string `json:"hashBefore"`
	HashAfter  string `json:"hashAfter"`
}

// Comparison is `agentproof compare A B --json` (schema agentproof.compare/v1): the two
// campaign ids, every cell of either with its change (sorted by change in Changes
// order, then by execution id), the suites whose definition changed, and the number
// of cells per change (every Change present, zeros included); HasRegression is set
// when a cell regressed.
type Comparison struct {
	Schema        string         `json:"schema"`
	Before        string         `json:"before"`
	After         string         `json:"after"`
	Counts        map[Change]int `json:"counts"`
	Suites        []SuiteChange  `json:"suites"`
	Cells         []CellChange   `json:"cells"`
	HasRegression bool           `json:"regressed"`
}

// CompareSchema tags a Comparison.
const CompareSchema = "agentproof.compare/v1"

// ReadCampaign reads and checks a campaign.json (its schema tag). Errors: unreadable
// or not a campaign document, naming the path.
func ReadCampaign(path string) (*Campaign, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Campaign
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: not a campaign document: %w", path, err)
	}
	if c.Schema != CampaignSchema {
		return nil, fmt.Errorf("%s: schema %q, want %q", path, c.Schema, CampaignSchema)
	}
	return &c, nil
}

// Compare compares campaign a (the baseline) with b cell by cell (see Change). A
// cell's suite hash is its result's SuiteDefinitionHash.
func Compare(a, b *Campaign) *Comparison {
	cmpn := &Comparison{Schema: CompareSchema, Before: a.CampaignID, After: b.CampaignID, Counts: map[Change]int{}, Suites: []SuiteChange{}, Cells: []CellChange{}}
	before := map[string]*Result{}
	for i := range a.Results {
		before[a.Results[i].ExecutionID] = &a.Results[i]
	}
	after := map[string]*Result{}
	for i := range b.Results {
		after[b.Results[i].ExecutionID] = &b.Results[i]
	}
	suites := map[string]SuiteChange{}
	for id, ra := range before {
		rb := after[id]
		cc := CellChange{ExecutionID: id, Before: Outcome(ra), StateBefore: baselineState(ra)}
		if rb == nil {
			cc.Change = Removed
			cmpn.add(cc)
			continue
		}
		cc.After, cc.StateAfter = Outcome(rb), baselineState(rb)
		cc.FailureClass, cc.Reason = rb.FailureClass, reasonOf(rb)
		switch {
		case rb.NotRunHere != "":
			cc.Change, cc.Reason = ChangeNotRunHere, rb.NotRunHere
		case ra.NotRunHere != "": // nothing ran in A to compare with
			cc.Change, cc.NotRunBefore = New, ra.NotRunHere
		case ra.SuiteDefinitionHash != rb.SuiteDefinitionHash:
			cc.Change, cc.HashBefore, cc.HashAfter = DefinitionChanged, ra.SuiteDefinitionHash, rb.SuiteDefinitionHash
			suites[rb.SuiteID] = SuiteChange{SuiteID: rb.SuiteID, HashBefore: ra.SuiteDefinitionHash, HashAfter: rb.SuiteDefinitionHash}
		case cc.StateAfter != "":
			cc.Change = Change(cc.StateAfter)
		case cc.After == verdict.Inconclusive:
			cc.Change = NowInconclusive
		case cc.After == verdict.Passed && cc.Before == verdict.Passed:
			cc.Change = StillPassing
		case cc.After == verdict.Passed:
			cc.Change = Fixed
		case cc.Before == verdict.Passed:
			cc.Change = Regressed
		default:
			cc.Change = StillFailing
		}
		cmpn.add(cc)
	}
	for id, rb := range after {
		if before[id] == nil {
			cmpn.add(CellChange{ExecutionID: id, Change: New, After: Outcome(rb), StateAfter: baselineState(rb), FailureClass: rb.FailureClass, Reason: reasonOf(rb)})
		}
	}
	for _, s := range suites {
		cmpn.Suites = append(cmpn.Suites, s)
	}
	slices.SortFunc(cmpn.Suites, func(x, y SuiteChange) int { return strings.Compare(x.SuiteID, y.SuiteID) })
	slices.SortFunc(cmpn.Cells, func(x, y CellChange) int {
		if d := slices.Index(Changes, x.Change) - slices.Index(Changes, y.Change); d != 0 {
			return d
		}
		return strings.Compare(x.ExecutionID, y.ExecutionID)
	})
	for _, ch := range Changes {
		cmpn.Counts[ch] += 0
	}
	cmpn.HasRegression = cmpn.Counts[Regressed] > 0
	return cmpn
}

func (c *Comparison) add(cc CellChange) {
	c.Cells = append(c.Cells, cc)
	c.Counts[cc.Change]++
}

// ExitCode is compare's exit code: ExitFailed when a cell regressed, else ExitPassed.
func (c *Comparison) ExitCode() verdict.ExitCode {
	if c.HasRegression {
		return verdict.ExitFailed
	}
	return verdict.ExitPassed
}

// Words is the change for humans ("still failing").
func (ch Change) Words() string {
	switch ch {
	case StillFailing:
		return "still failing"
	case NowInconclusive:
		return "inconclusive"
	case ChangeNotRunHere:
		return "not run here"
	case DefinitionChanged:
		return "definition changed (not compared)"
	case StillPassing:
		return "still passing"
	case ChangeKnownFailure:
		return "known failure"
	case ChangeUnexpectedPass:
		return "unexpectedly passed"
	}
	return string(ch)
}

// baselineState is r's state when r is a cell of the baseline of known failures that
// ended as a known failure or an unexpected pass, else "".
func baselineState(r *Result) CellState {
	if s := StateOf(r); s == StateKnownFailure || s == StateUnexpectedPass {
		return s
	}
	return ""
}

// reasonOf is r's error, or for a calibration cell that counts otherwise than its
// verdict without one, "observed <verdict>, expected <expected>"; a known failure's
// reason follows it.
func reasonOf(r *Result) string {
	if k := r.KnownFailure; k != nil {
		return strings.TrimPrefix(reasonWithout(r)+"; known failure since "+k.Since+": "+k.Reason, "; ")
	}
	return reasonWithout(r)
}

// reasonWithout is reasonOf without the known failure's reason.
func reasonWithout(r *Result) string {
	if r.Error == "" && r.ExpectedVerdict != "" && r.Verdict != r.ExpectedVerdict {
		return fmt.Sprintf("observed %s, expected %s", r.Verdict, r.ExpectedVerdict)
	}
	return r.Error
}
