package catalog

import (
	"slices"
	"strings"

	"github.com/agentproof/agentproof/verdict"
)

// KnownVerdicts are what a known failure may expect its cell to end as.
var KnownVerdicts = []verdict.Verdict{verdict.Failed, verdict.Inconclusive}

// maxKnownText bounds a known failure's reason and since (bytes).
const maxKnownText = 2000

// validateKnownFailures checks the baseline of known failures and binds each entry to
// its cell: cell, reason, expected (failed or inconclusive) and since are required; the
// cell must be a cell of a suite's matrix (cellsBuilt: the matrices could be built; a
// suite that exists without that cell, an excluded execution id or a cell of another
// suite's definition is named as such); a calibration cell (expectedVerdicts) takes no
// entry (its expectation is its own); a cell named twice is a duplicate, naming the
// first entry.
func (v *validator) validateKnownFailures(cellsBuilt bool) {
	first := map[string]*KnownFailure{}
	for _, k := range nonNil(v, v.c.KnownFailures, "known failure") {
		k.Source = v.at(k).Location()
		v.required("known failure cell", &k.Cell, k)
		v.required("known failure reason", &k.Reason, k)
		v.required("known failure since", &k.Since, k)
		for _, f := range []*string{&k.Reason, &k.Since} {
			if len(*f) > maxKnownText {
				v.add(v.at(f, k), "known failure of %s: longer than %d bytes", k.Cell, maxKnownText)
			}
		}
		enumOf(v, "known failure expected", &k.Expected, KnownVerdicts, k, true)
		if k.Cell == "" {
			continue
		}
		if prev := first[k.Cell]; prev != nil {
			v.add(v.at(&k.Cell, k), "duplicate known failure of %s (first declared at %s)", k.Cell, prev.Source)
			continue
		}
		first[k.Cell] = k
		if cellsBuilt {
			v.bindKnownFailure(k)
		}
	}
}

// bindKnownFailure sets k on the cell it names, or reports why it names no cell.
func (v *validator) bindKnownFailure(k *KnownFailure) {
	cell := v.c.byCellID[k.Cell]
	switch {
	case cell == nil:
		v.add(v.at(&k.Cell, k), "known failure names %q, which is no cell of the catalog: %s", k.Cell, v.whyNoCell(k.Cell))
	case cell.ExpectedVerdict != "":
		v.add(v.at(&k.Cell, k), "known failure names %s, a calibration cell (its suite %s expects %s of it): calibration cells take no known failure",
			k.Cell, cell.Suite.ID, cell.ExpectedVerdict)
	default:
		cell.KnownFailure = k
	}
}

// whyNoCell says why id is no cell: no suite of that id, an excluded execution id, or
// which part of the id the suite's definition lacks.
func (v *validator) whyNoCell(id string) string {
	var suite *Suite
	for _, s := range v.c.Suites {
		if s != nil && strings.HasPrefix(id, s.ID+".") && (suite == nil || len(s.ID) > len(suite.ID)) {
			suite = s
		}
	}
	if suite == nil {
		return "no suite's id starts it (a cell id is <suite>.<profile>.<environment>.<case>)"
	}
	if slices.Contains(suite.ExcludedExecutionIDs, id) {
		return "suite " + suite.ID + " excludes it (excludedExecutionIds)"
	}
	rest := strings.TrimPrefix(id, suite.ID+".")
	var missing []string
	for what, ids := range map[string][]string{"profile": suite.Profiles, "environment": suite.Environments, "case": suite.Cases} {
		found := false
		for _, x := range ids {
			if strings.Contains("."+rest+".", "."+x+".") || strings.HasPrefix(rest, x+".") || strings.HasSuffix(rest, "."+x) {
				found = true
			}
		}
		if !found {
			missing = append(missing, what)
		}
	}
	slices.Sort(missing)
	if len(missing) == 0 {
		return "suite " + suite.ID + " has no such cell in its matrix (a profile that does not support the environment?)"
	}
	return "suite " + suite.ID + " has no such " + strings.Join(missing, ", ") + " in its definition (another suite's cell?)"
}
