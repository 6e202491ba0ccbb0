package catalog

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Selector chooses cells from a catalog's matrix. Within
// one dimension values are ORed; dimensions are ANDed; Groups are ANDed (a cell must
// carry every requested group). IDs is exclusive with All and with every dimension, and
// All is exclusive with the dimensions.
type Selector struct {
	All          bool
	IDs          []string
	Suites       []string
	Groups       []string
	Profiles     []string
	Environments []string
	Cases        []string
	// Listing is set by inventory commands (`agentproof list` without --matrix-json): it
	// keeps manual-only suites' cells unless All is set,
	// so that `list --all` shows exactly what a run with --all would run.
	Listing bool
}

// IsEmpty reports whether no selector at all was given (neither All, IDs nor a
// dimension). Commands that start runs must refuse an empty selector.
func (s Selector) IsEmpty() bool {
	return !s.All && len(s.IDs) == 0 && !s.hasDimension()
}

func (s Selector) hasDimension() bool {
	return len(s.Suites)+len(s.Groups)+len(s.Profiles)+len(s.Environments)+len(s.Cases) > 0
}

// SelectionError is a selector that names unknown values, combines exclusive flags or
// matches no cell. Commands map it to exit code 2 before anything starts.
type SelectionError struct {
	Message string
}

// Error returns the message, which names every offending value.
func (e *SelectionError) Error() string { return e.Message }

// ErrNoSelector is the message for a run without --all, --id or a dimension.
const ErrNoSelector = "choose cells with --all or a selector (--id, --suite, --group, --profile, --environment, --case); use 'agentproof list' to inspect valid cells"

// Select returns the selected cells in matrix order, or a *SelectionError:
//
//   - "--id cannot be combined with --all or dimension selectors", "--all cannot be
//     combined with dimension selectors";
//   - "unknown <suite|group|profile|environment|case|cell id>: a, b" for values absent
//     from the matrix (groups are checked against the union of the cells' groups),
//     with "(did you mean x?)" naming the closest known values (Suggest);
//   - "selectors matched zero cells" when nothing remains.
//
// An empty selector selects every cell when Listing is set; otherwise (a run) it
// selects every cell of suites that are not manual-only — callers that start runs
// check IsEmpty first. Manual-only suites' cells are reachable by --id, by naming the
// suite with --suite, or when Listing without All.
func (c *Catalog) Select(sel Selector) ([]*Cell, error) {
	if len(sel.IDs) > 0 && (sel.All || sel.hasDimension()) {
		return nil, &SelectionError{Message: "--id cannot be combined with --all or dimension selectors (--suite, --group, --profile, --environment, --case)"}
	}
	if sel.All && sel.hasDimension() {
		return nil, &SelectionError{Message: "--all cannot be combined with dimension selectors (--suite, --group, --profile, --environment, --case)"}
	}
	if problems := c.unknownSelections(sel); len(problems) > 0 {
		return nil, &SelectionError{Message: strings.Join(problems, "; ") + " (use 'agentproof list' to inspect valid cells)"}
	}
	var out []*Cell
	if len(sel.IDs) > 0 {
		want := make(map[string]bool, len(sel.IDs))
		for _, id := range sel.IDs {
			want[id] = true
		}
		for _, cell := range c.Cells {
			if want[cell.ID] {
				out = append(out, cell)
			}
		}
	} else {
		out = c.selectByDimension(sel)
	}
	if len(out) == 0 {
		return nil, &SelectionError{Message: "selectors matched zero cells (use 'agentproof list' to inspect valid cells)"}
	}
	return out, nil
}

// unknownSelections returns one problem per dimension of sel (suite, group, profile,
// environment, case, cell id) with values that name nothing in the matrix, in that
// order: "--<flag>: unknown <dimension>: a, b", the closest known values ("did you mean";
// Suggest) and, except for cell ids, the known values sorted.
func (c *Catalog) unknownSelections(sel Selector) []string {
	var problems []string
	check := func(flag, label string, values []string, known func(string) bool, names map[string]bool) {
		var unknown []string
		for _, v := range values {
			if !known(v) && !slices.Contains(unknown, v) {
				unknown = append(unknown, v)
			}
		}
		if len(unknown) > 0 {
			candidates := slices.Collect(maps.Keys(names))
			if names == nil && len(c.byCellID) <= maxSuggestCells {
				candidates = slices.Collect(maps.Keys(c.byCellID))
			}
			p := fmt.Sprintf("%s: unknown %s: %s%s", flag, label, strings.Join(unknown, ", "), didYouMean(unknown, candidates))
			if len(names) > 0 {
				p += fmt.Sprintf(" (known: %s)", strings.Join(slices.Sorted(maps.Keys(names)), ", "))
			}
			problems = append(problems, p)
		}
	}
	idx := c.index()
	check("--suite", "suite", sel.Suites, func(v string) bool { return idx.suites[v] }, idx.suites)
	check("--group", "group", sel.Groups, func(v string) bool { return idx.groups[v] }, idx.groups)
	check("--profile", "profile", sel.Profiles, func(v string) bool { return idx.profiles[v] }, idx.profiles)
	check("--environment", "environment", sel.Environments, func(v string) bool { return idx.envs[v] }, idx.envs)
	check("--case", "case", sel.Cases, func(v string) bool { return idx.cases[v] }, idx.cases)
	check("--id", "cell id", sel.IDs, func(v string) bool { return c.byCellID[v] != nil }, nil)
	return problems
}

// selectByDimension returns, in matrix order, the cells in every dimension sel
// names (each dimension it leaves empty matches all) that carry all of sel's groups.
// A manual-only suite's cells are left out unless sel names the suite or lists
// without All.
func (c *Catalog) selectByDimension(sel Selector) []*Cell {
	var out []*Cell
	suites, profiles, envs, cases := toSet(sel.Suites), toSet(sel.Profiles), toSet(sel.Environments), toSet(sel.Cases)
	for _, cell := range c.Cells {
		if cell.Suite.ManualOnly && (!sel.Listing || sel.All) && !suites[cell.Suite.ID] {
			continue
		}
		if (len(suites) > 0 && !suites[cell.Suite.ID]) ||
			(len(profiles) > 0 && !profiles[cell.Profile.ID]) ||
			(len(envs) > 0 && !envs[cell.Environment.ID]) ||
			(len(cases) > 0 && !cases[cell.Case.ID]) {
			continue
		}
		if !hasAll(cell.Groups, sel.Groups) {
			continue
		}
		out = append(out, cell)
	}
	return out
}

func toSet(vs []string) map[string]bool {
	if len(vs) == 0 {
		return nil
	}
	m := make(map[string]bool, len(vs))
	for _, v := range vs {
		m[v] = true
	}
	return m
}

func hasAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// matrixIndex is the set of values present in the matrix, per dimension.
type matrixIndex struct {
	suites, groups, profiles, envs, cases map[string]bool
}

func (c *Catalog) index() *matrixIndex { return c.idx }

// buildIndex computes the per-dimension value sets of the matrix.
func buildIndex(cells []*Cell) *matrixIndex {
	ix := &matrixIndex{
		suites: map[string]bool{}, groups: map[string]bool{}, profiles: map[string]bool{},
		envs: map[string]bool{}, cases: map[string]bool{},
	}
	for _, cell := range cells {
		ix.suites[cell.Suite.ID] = true
		ix.profiles[cell.Profile.ID] = true
		ix.envs[cell.Environment.ID] = true
		ix.cases[cell.Case.ID] = true
		for _, g := range cell.Groups {
			ix.groups[g] = true
		}
	}
	return ix
}
