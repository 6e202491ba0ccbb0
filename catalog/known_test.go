package catalog

import (
	"strings"
	"testing"

	"github.com/agentproof/agentproof/verdict"
)

// knownCalibration adds a calibration suite (expectedVerdicts) to baseB.
const knownCalibration = `  - id: calib
    label: Calib
    description: Calibration.
    groups: [core]
    profiles: [agent]
    environments: [local]
    cases: [hello]
    expectedMatrixSize: 1
    expectedVerdicts: {agent: failed}
`

// TestKnownFailures: an entry binds to its cell; bad entries are problems naming
// their file and line — no such cell (naming why), a calibration cell, a duplicate
// (naming the first), a missing field, an expectation other than failed or
// inconclusive.
func TestKnownFailures(t *testing.T) {
	t.Parallel()
	good := "knownFailures:\n  - cell: core.agent.local.hello\n    reason: ends the turn without a message\n    expected: failed\n    since: codex-acp 0.16.0\n"
	c, err := loadFiles(map[string]string{"a.yaml": baseA, "b.yaml": baseB, "known-failures.yaml": good})
	if err != nil {
		t.Fatal(err)
	}
	k := c.Cell("core.agent.local.hello").KnownFailure
	if k == nil || k.Expected != verdict.Failed || k.Since != "codex-acp 0.16.0" || k.Source != "known-failures.yaml:2:5" || len(c.KnownFailures) != 1 {
		t.Fatalf("known failure = %+v", k)
	}
	b := baseB + knownCalibration
	for _, tc := range []struct {
		name, known string
		want        []string
	}{
		{"no such cell", "knownFailures:\n  - {cell: core.agent.local.bye, reason: r, expected: failed, since: v1}\n",
			[]string{`known-failures.yaml:2:`, `known failure names "core.agent.local.bye", which is no cell of the catalog: suite core has no such case in its definition`}},
		{"no such suite", "knownFailures:\n  - {cell: other.agent.local.hello, reason: r, expected: failed, since: v1}\n",
			[]string{"no suite's id starts it"}},
		{"another suite's profile", "knownFailures:\n  - {cell: core.nobody.local.hello, reason: r, expected: failed, since: v1}\n",
			[]string{"suite core has no such profile in its definition"}},
		{"calibration cell", "knownFailures:\n  - {cell: calib.agent.local.hello, reason: r, expected: failed, since: v1}\n",
			[]string{"calib.agent.local.hello, a calibration cell (its suite calib expects failed of it)"}},
		{"duplicate", "knownFailures:\n  - {cell: core.agent.local.hello, reason: r, expected: failed, since: v1}\n  - {cell: core.agent.local.hello, reason: s, expected: inconclusive, since: v2}\n",
			[]string{"known-failures.yaml:3:", "duplicate known failure of core.agent.local.hello (first declared at known-failures.yaml:2:5)"}},
		{"fields", "knownFailures:\n  - {cell: core.agent.local.hello, expected: passed}\n",
			[]string{"known failure reason is required", "known failure since is required", `known failure expected "passed" is not one of failed, inconclusive`}},
		{"no cell", "knownFailures:\n  - {reason: r, expected: failed, since: v1}\n", []string{"known failure cell is required"}},
		{"unknown key", "knownFailures:\n  - {cell: core.agent.local.hello, reason: r, expected: failed, since: v1, until: v2}\n", []string{"until"}},
	} {
		_, err := loadFiles(map[string]string{"a.yaml": baseA, "b.yaml": b, "known-failures.yaml": tc.known})
		if err == nil {
			t.Errorf("%s: loaded", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nlacks %q", tc.name, err, w)
			}
		}
	}
}

// FuzzKnownFailures: a known-failures file never panics the loader, and an accepted
// one binds every entry to a cell of the matrix with failed or inconclusive expected.
func FuzzKnownFailures(f *testing.F) {
	f.Add("knownFailures:\n  - {cell: core.agent.local.hello, reason: r, expected: failed, since: v1}\n")
	f.Add("knownFailures:\n  - cell: core.agent.local.hello\n    reason: \"x\"\n    expected: inconclusive\n    since: \"1\"\n")
	f.Add("knownFailures: [{cell: calib.agent.local.hello, reason: r, expected: failed, since: v}]\n")
	f.Add("knownFailures: [null, {}, {cell: &a core.agent.local.hello, reason: *a, expected: failed, since: *a}]\n")
	f.Fuzz(func(t *testing.T, src string) {
		c, err := loadFiles(map[string]string{"a.yaml": baseA, "b.yaml": baseB + knownCalibration, "known-failures.yaml": src})
		if err != nil {
			return
		}
		for _, k := range c.KnownFailures {
			cell := c.Cell(k.Cell)
			if cell == nil || cell.KnownFailure != k || (k.Expected != verdict.Failed && k.Expected != verdict.Inconclusive) || cell.ExpectedVerdict != "" {
				t.Fatalf("accepted %+v (cell %+v)", k, cell)
			}
		}
	})
}
