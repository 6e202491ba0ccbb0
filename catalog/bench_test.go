package catalog

import (
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
)

// generatedCatalog returns a catalog of 10,000 cells: 10 suites × 20 profiles × 1
// environment × 50 cases of their own (500 cases in all), every case with the terminal
// matcher set, a regex matcher and a reference script, split over three files.
func generatedCatalog() fstest.MapFS {
	const suites, profiles, cases = 10, 20, 50
	var p, c, s strings.Builder
	p.WriteString(baseA[:strings.Index(baseA, "profiles:")])
	p.WriteString("profiles:\n")
	for i := range profiles {
		fmt.Fprintf(&p, `  - id: agent-%d
    label: Agent %d
    generation: native
    groups: [core]
    driver: reference
    provider: agentproof
    model: model-%d
    modelQualification: {source: builtin, qualificationId: "builtin:%d"}
    supportedEnvironments: [local]
`, i, i, i, i)
	}
	c.WriteString("cases:\n")
	for i := range suites * cases {
		fmt.Fprintf(&c, `  - id: case-%d
    label: Case %d
    workMode: standard
    flow: single_turn
    expectedRunCount: 1
    attemptTimeoutMs: {local: 480000}
    expectedTerminalState: {issue: done, run: succeeded}
    title: "Case %d {{nonce}}"
    prompt: "Post exactly {{marker}} and mark the task done."
    marker: "MARKER_%d_{{nonce}}"
    matchers:
      - {kind: message_exact, expected: "{{marker}}"}
      - {kind: message_occurrences, expected: "{{marker}}", count: 1}
      - {kind: message_regex, pattern: "^MARKER_[0-9]+_{{nonce}}$"}
      - {kind: issue_status, expected: "{{issueStatus}}"}
      - {kind: run_status, expected: "{{runStatus}}"}
      - {kind: runtime_mode, expected: "{{runtimeMode}}"}
      - {kind: environment, expected: "{{environment}}"}
    reference:
      turns:
        - trigger: assignment
          steps:
            - command: report_progress
              args: {body: "Working on case %d."}
            - command: finish_task
              args: {summary: "{{marker}}"}
              present: true
`, i, i, i, i, i)
	}
	var profileIDs []string
	for i := range profiles {
		profileIDs = append(profileIDs, fmt.Sprintf("agent-%d", i))
	}
	s.WriteString("suites:\n")
	for i := range suites {
		var caseIDs []string
		for j := range cases {
			caseIDs = append(caseIDs, fmt.Sprintf("case-%d", i*cases+j))
		}
		fmt.Fprintf(&s, `  - id: suite-%d
    label: Suite %d
    description: Generated suite %d.
    groups: [core]
    profiles: [%s]
    environments: [local]
    cases: [%s]
    expectedMatrixSize: %d
    definitionMetadata: {version: %d, generated: true}
`, i, i, i, strings.Join(profileIDs, ", "), strings.Join(caseIDs, ", "), profiles*cases, i)
	}
	return fstest.MapFS{
		"a.yaml":      &fstest.MapFile{Data: []byte(p.String())},
		"cases.yaml":  &fstest.MapFile{Data: []byte(c.String())},
		"suites.yaml": &fstest.MapFile{Data: []byte(s.String())},
	}
}

func TestGeneratedCatalog(t *testing.T) {
	t.Parallel()
	c, err := Load(generatedCatalog())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Cells) != 10_000 {
		t.Fatalf("generated catalog has %d cells, want 10000", len(c.Cells))
	}
}

// BenchmarkLoadValidate measures loading, validating (matchers compiled), building the
// matrix and fingerprinting a 10,000-cell catalog. Goal: under 100 ms per op.
func BenchmarkLoadValidate(b *testing.B) {
	fsys := generatedCatalog()
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		if _, err := Load(fsys); err != nil {
			b.Fatal(err)
		}
	}
	// CPU time (user+system, all threads) per op: on a shared machine wall time
	// includes waiting for a core; this does not.
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user+system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkSelect measures selections over the 10,000-cell matrix. Goal: under 10 ms
// per selection.
func BenchmarkSelect(b *testing.B) {
	c, err := Load(generatedCatalog())
	if err != nil {
		b.Fatal(err)
	}
	sels := map[string]Selector{
		"all":        {All: true},
		"dimensions": {Suites: []string{"suite-3", "suite-7"}, Profiles: []string{"agent-1", "agent-2", "agent-19"}, Groups: []string{"core"}, Cases: []string{"case-150", "case-349", "case-399"}},
		"ids":        {IDs: []string{"suite-9.agent-19.local.case-499", "suite-0.agent-0.local.case-0"}},
	}
	for name, sel := range sels {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Select(sel); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoadDefault measures loading the embedded default catalog (what every
// command without --catalog does first): "cached" reads its files from the embedded
// node cache (defaultnodes.bin), "parsed" the same files with one more newline each,
// which the cache does not hold, through the YAML parser.
func BenchmarkLoadDefault(b *testing.B) {
	parsed := fstest.MapFS{}
	names, err := fs.Glob(DefaultFS(), "*.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range names {
		data, err := fs.ReadFile(DefaultFS(), name)
		if err != nil {
			b.Fatal(err)
		}
		parsed[name] = &fstest.MapFile{Data: append(data, '\n')}
	}
	for _, bc := range []struct {
		name string
		src  source
	}{
		{"cached", defaultSource()},
		{"parsed", source{fsys: parsed, prefix: "default", breadth: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				if _, err := loadSources([]source{bc.src}, buildOptions(nil)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}
