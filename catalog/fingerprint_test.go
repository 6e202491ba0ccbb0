package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/golden"

	"github.com/agentproof/agentproof/canonjson"
)

// Pinned output of testdata/fingerprint/stringify.js (node's JSON.stringify over the
// same definitions, written independently of the Go encoder: the fingerprint must stay
// byte-compatible with the original harness's).
const (
	jsTrickyJSON  = `{"id":"tricky","profiles":[{"id":"agent","model":"gpt-5.4","qualification":{"source":"qualified_runner_profile","qualificationId":"codex:qualified-model"}},{"id":"agent-b","model":"claude-sonnet-4-6 <&>","qualification":{"source":"adapter_constant","qualificationId":"claude_local:default-model"}}],"environments":[{"id":"local","configurationKey":"default"},{"id":"daytona","configurationKey":"warm-reuse-v1"}],"tasks":[{"id":"hello","flow":"single_turn","expectedRunCount":1,"restartServerBeforeQuestionAnswer":false},{"id":"resume","flow":"question_resume_completion","expectedRunCount":2,"minimumExpectedRunCount":1,"restartServerBeforeQuestionAnswer":true}],"excludedExecutionIds":["tricky.agent-b.local.hello","tricky.agent.local.resume"],"metadata":{"2":"two","10":"ten","zeta":"first","01":"zero-one","alpha":"<b>&amp;</b> \"quoted\" back\\slash","unicode":"é 漢字 😀 ` + "\u2028 \u2029" + ` \u0001 \t end","numbers":[0,0,1.5,1e+21,1e-7,123456789012345680,0.1,100,-3],"nested":{"b":1,"a":[true,false,null,{"y":2,"x":1}]},"empty":{},"list":[]}}`
	jsTrickyHash  = "21320d3db944d89df56661417c43f8c658bb0fc1f9e9f6ff8fb222600da265b4"
	jsPlainJSON   = `{"id":"plain","profiles":[{"id":"agent-b","model":"claude-sonnet-4-6 <&>","qualification":{"source":"adapter_constant","qualificationId":"claude_local:default-model"}}],"environments":[{"id":"local","configurationKey":"default"}],"tasks":[{"id":"hello","flow":"single_turn","expectedRunCount":1,"restartServerBeforeQuestionAnswer":false}],"excludedExecutionIds":[],"metadata":null}`
	jsPlainHash   = "9044b38d302eab4248df0d41156fc2070a261f50d49d23e590a0eaa728159fda"
	jsRankingHash = "7044e83321d714ca7bf1527ab3b82884b21bc2c0386da276c67e473444e80ee8"
)

func loadFingerprintCatalog(t *testing.T, edit func(string) string) *Catalog {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "fingerprint", "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(data)
	if edit != nil {
		src = edit(src)
	}
	c, err := loadFiles(map[string]string{"catalog.yaml": src}, append(testFlows, FlowContract{Name: "continuation"})...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFingerprintMatchesJSONStringify(t *testing.T) {
	t.Parallel()
	c := loadFingerprintCatalog(t, nil)
	for _, tc := range []struct{ suite, json, hash string }{
		{"tricky", jsTrickyJSON, jsTrickyHash},
		{"plain", jsPlainJSON, jsPlainHash},
	} {
		s := c.Suite(tc.suite)
		got, err := s.SeedFingerprintJSON()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.json, string(got)); diff != "" {
			t.Errorf("%s SeedFingerprintJSON differs from JSON.stringify (-js +go):\n%s", tc.suite, diff)
		}
		if h := canonjson.SHA256Hex(got); h != tc.hash {
			t.Errorf("%s seed fingerprint = %s, want %s", tc.suite, h, tc.hash)
		}
		full, err := s.FingerprintJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(full), strings.TrimSuffix(tc.json, "}")+`,"grading":{"cases":[`) || canonjson.SHA256Hex(full) != s.Fingerprint {
			t.Errorf("%s FingerprintJSON is not the seed's definition and its grading: %s", tc.suite, full)
		}
	}
	if got, _ := c.Rankings[0].ComputeContentHash(); got != jsRankingHash {
		t.Errorf("ranking content hash = %s, want %s", got, jsRankingHash)
	}
}

// TestFingerprintSensitivity proves what changes the fingerprint (what a suite runs:
// models, qualifications, configuration keys, flows, run counts, exclusions, metadata,
// profile order; and what grades it: prompts, titles, matchers, timeouts, reference
// scripts, drivers and their configuration, generations, expected verdicts) and what
// does not (labels, descriptions, groups, the order of exclusions).
func TestFingerprintSensitivity(t *testing.T) {
	t.Parallel()
	base := loadFingerprintCatalog(t, nil).Suite("tricky").Fingerprint
	rows := []struct {
		name    string
		edits   [][2]string
		changes bool
	}{
		{"profile model", [][2]string{{"model: gpt-5.4", "model: gpt-5.5"}}, true},
		{"qualification id", [][2]string{{`qualificationId: "codex:qualified-model"`, `qualificationId: "codex:qualified-model-2"`}}, true},
		{"qualification source", [][2]string{{"source: qualified_runner_profile", "source: adapter_constant"}}, true},
		{"environment configurationKey", [][2]string{{"configurationKey: warm-reuse-v1", "configurationKey: warm-reuse-v2"}, {"daytona@warm-reuse-v1", "daytona@warm-reuse-v2"}}, true},
		{"case flow", [][2]string{{"flow: single_turn", "flow: continuation"}}, true},
		{"case run count", [][2]string{{"expectedRunCount: 2\n", "expectedRunCount: 3\n"}}, true},
		{"minimum run count", [][2]string{{"minimumExpectedRunCount: 1", "minimumExpectedRunCount: 2"}}, true},
		{"restart flag", [][2]string{{"restartServerBeforeQuestionAnswer: true", "restartServerBeforeQuestionAnswer: false"}}, true},
		{"exclusions", [][2]string{{"      - tricky.agent-b.local.hello\n", ""}, {"expectedMatrixSize: 4", "expectedMatrixSize: 5"}}, true},
		{"metadata value", [][2]string{{"zeta: first", "zeta: second"}}, true},
		{"metadata key order", [][2]string{{"      zeta: first\n", ""}, {"      list: []\n", "      list: []\n      zeta: first\n"}}, true},
		{"profile order", [][2]string{{"profiles: [agent, agent-b]", "profiles: [agent-b, agent]"}}, true},
		{"suite label", [][2]string{{"label: Tricky", "label: Very tricky"}}, false},
		{"suite description", [][2]string{{"Every fingerprint input at once.", "Something else."}}, false},
		{"case prompt", [][2]string{{`prompt: "Say {{marker}}"`, `prompt: "Please say {{marker}}"`}}, true},
		{"case title", [][2]string{{`title: "Hello {{nonce}}"`, `title: "Hi {{nonce}}"`}}, true},
		{"case label", [][2]string{{"label: Hello", "label: Hi"}}, false},
		{"matcher kind", [][2]string{{`{kind: message_exact, expected: "{{marker}}"}`, `{kind: message_contains, expected: "{{marker}}"}`}}, true},
		{"matcher expected", [][2]string{{`{kind: message_exact, expected: "{{marker}}"}`, `{kind: message_exact, expected: "X{{marker}}"}`}}, true},
		{"timeout", [][2]string{{"{local: 480000, daytona: 900000}", "{local: 490000, daytona: 900000}"}}, true},
		{"terminal state", [][2]string{{"expectedTerminalState: {issue: done, run: succeeded}\n    title: \"Hello", "expectedTerminalState: {issue: in_review, run: succeeded}\n    title: \"Hello"}}, true},
		{"profile generation", [][2]string{{"generation: legacy", "generation: native"}}, true},
		{"profile driverConfig", [][2]string{{"        CODEX_API_KEY: {type: secret_ref, secretId: OPENAI_API_KEY, version: latest}\n", ""}}, true},
		{"environment resources", [][2]string{{"resources: {cpu: 4, memoryGiB: 4, diskGiB: 10}", "resources: {cpu: 2, memoryGiB: 4, diskGiB: 10}"}}, true},
		{"environment label", [][2]string{{"label: Daytona warm reusable sandbox", "label: Daytona"}}, false},
		{"exclusion order", [][2]string{{"      - tricky.agent.local.resume\n      - tricky.agent-b.local.hello\n", "      - tricky.agent-b.local.hello\n      - tricky.agent.local.resume\n"}}, false},
		{"profile label and credential", [][2]string{{"label: Agent B", "label: Agent Bee"}}, false},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			c := loadFingerprintCatalog(t, func(s string) string {
				for _, e := range r.edits {
					if !strings.Contains(s, e[0]) {
						t.Fatalf("test setup: %q not in catalog", e[0])
					}
					s = strings.Replace(s, e[0], e[1], 1)
				}
				return s
			})
			got := c.Suite("tricky").Fingerprint
			if changed := got != base; changed != r.changes {
				t.Errorf("fingerprint changed = %v, want %v (%s vs %s)", changed, r.changes, got, base)
			}
		})
	}
}

// TestDefaultFingerprintsGolden pins the default catalog's suite fingerprints; a change
// to a suite's definition must update testdata/default-fingerprints.golden on purpose
// (go test ./catalog -run TestDefaultFingerprintsGolden -update).
func TestDefaultFingerprintsGolden(t *testing.T) {
	t.Parallel()
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, s := range c.Suites {
		b.WriteString(s.Fingerprint + "  " + s.ID + "\n")
	}
	golden.Assert(t, b.String(), "default-fingerprints.golden")
}

func TestSelectionFingerprint(t *testing.T) {
	t.Parallel()
	// node -e 'sha256(JSON.stringify(["a.b.c.d","a.b.c.e"]))'
	want := "selection-478e4af9284289c10b456bf7194ad1bbc52db1cd87c3020ed843b80e25b67f05"
	for _, ids := range [][]string{{"a.b.c.e", "a.b.c.d"}, {"a.b.c.d", "a.b.c.e"}} {
		if got := SelectionFingerprint(ids); got != want {
			t.Errorf("SelectionFingerprint(%q) = %s, want %s", ids, got, want)
		}
	}
}

// TestDefinitionChange names the first difference of two definitions by path, with
// declarations named by id, and both values.
func TestDefinitionChange(t *testing.T) {
	t.Parallel()
	base := loadFingerprintCatalog(t, nil).Suite("tricky")
	was, err := base.FingerprintJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"matcher expected", `{kind: message_exact, expected: "{{marker}}"}`, `{kind: message_exact, expected: "X{{marker}}"}`,
			`grading.cases[hello].matchers[0].expected (was "{{marker}}", now "X{{marker}}")`},
		{"prompt", `prompt: "Say {{marker}}"`, `prompt: "Please say {{marker}}"`, `grading.cases[hello].prompt (was "Say {{marker}}", now "Please say {{marker}}")`},
		{"model", "model: gpt-5.4", "model: gpt-5.5", `grading.profiles[agent].model (was "gpt-5.4", now "gpt-5.5")`},
		{"a key added", "    marker: \"OK_{{nonce}}\"\n", "    marker: \"OK_{{nonce}}\"\n    workspaceFile: f.txt\n", `grading.cases[hello].workspaceFile (was absent, now "f.txt")`},
	} {
		now, err := loadFingerprintCatalog(t, func(s string) string { return strings.Replace(s, tc.old, tc.new, 1) }).Suite("tricky").FingerprintJSON()
		if err != nil {
			t.Fatal(err)
		}
		if got := DefinitionChange(was, now); got != tc.want {
			t.Errorf("%s: %q\nwant %q", tc.name, got, tc.want)
		}
	}
	if got := DefinitionChange(was, was); got != "" {
		t.Errorf("same definition: %q", got)
	}
	if got := DefinitionChange([]byte("{"), was); !strings.Contains(got, "not JSON") {
		t.Errorf("bad JSON: %q", got)
	}
}

// TestDefaultDefinitionsSize bounds what plan.json records of the default catalog's
// suites (every suite's definition) so that writing it stays cheap.
func TestDefaultDefinitionsSize(t *testing.T) {
	t.Parallel()
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, s := range c.Suites {
		b, err := s.FingerprintJSON()
		if err != nil {
			t.Fatal(err)
		}
		total += len(b)
	}
	if total > 4<<20 {
		t.Errorf("the default catalog's definitions take %d bytes", total)
	}
	t.Logf("%d suites, %d bytes of definitions", len(c.Suites), total)
}
