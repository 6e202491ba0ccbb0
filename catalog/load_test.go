package catalog

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// baseA and baseB are a minimal valid catalog split over two files; bad-input rows
// mutate them.
const baseA = `groups:
  - {id: core, description: Core.}
credentials:
  - {id: OPENAI_API_KEY, scope: profile}
  - {id: DAYTONA_API_KEY, scope: environment}
environments:
  - id: local
    label: Local
    driver: local
    provider: local
    lifecycle: {setup: instance_managed, probe: run_context_via_api, cleanup: instance_shutdown}
    expectedExecutionTarget: {kind: local}
profiles:
  - id: agent
    label: Agent
    generation: native
    groups: [core]
    driver: exec:codex
    driverConfig:
      env:
        OPENAI_API_KEY: {type: secret_ref, secretId: OPENAI_API_KEY, version: latest}
    provider: codex
    model: gpt-x
    modelQualification: {source: adapter_constant, qualificationId: "codex_local:default-model"}
    credential: OPENAI_API_KEY
    supportedEnvironments: [local]
`

const baseB = `cases:
  - id: hello
    label: Hello
    workMode: standard
    flow: single_turn
    expectedRunCount: 1
    attemptTimeoutMs: {local: 480000}
    expectedTerminalState: {issue: done, run: succeeded}
    title: "Hello {{nonce}}"
    prompt: "Say {{marker}}"
    marker: "OK_{{nonce}}"
    matchers:
      - {kind: message_exact, expected: "{{marker}}"}
suites:
  - id: core
    label: Core
    description: Core suite.
    groups: [core]
    profiles: [agent]
    environments: [local]
    cases: [hello]
    expectedMatrixSize: 1
`

func loadFiles(files map[string]string, flows ...FlowContract) (*Catalog, error) {
	fsys := fstest.MapFS{}
	for name, content := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(content)}
	}
	if flows == nil {
		flows = testFlows
	}
	return Load(fsys, WithFlows(flows...))
}

// testFlows are the flows the test catalogs of this package name, with contracts of
// the kinds they need; the real flows and their contracts are the flow registry's
// (package campaign/flows), tested there against the default catalog.
var testFlows = []FlowContract{
	{Name: "single_turn"},
	{Name: "process_exit", FixtureProgram: true},
	{Name: "question_resume_completion", Needs: []Need{{Field: FieldQuestionAnswer}}, Accepts: []CaseField{FieldRestartServer}},
}

func mustReplace(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("test setup: %q not in base", old)
	}
	return strings.Replace(s, old, new, 1)
}

// at returns "file:line:" for the first line of content containing needle.
func at(t *testing.T, file, content, needle string) string {
	t.Helper()
	for i, line := range strings.Split(content, "\n") {
		if strings.Contains(line, needle) {
			return fmt.Sprintf("%s:%d:", file, i+1)
		}
	}
	t.Fatalf("test setup: %q not in %s", needle, file)
	return ""
}

func TestBaseCatalogIsValid(t *testing.T) {
	t.Parallel()
	c, err := loadFiles(map[string]string{"a.yaml": baseA, "b.yaml": baseB})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Cells) != 1 || c.Cells[0].ID != "core.agent.local.hello" {
		t.Fatalf("cells = %v", c.Cells)
	}
	got := c.Cells[0]
	if strings.Join(got.RequiredCredentials, ",") != "OPENAI_API_KEY" || got.AttemptTimeoutMs != 480000 {
		t.Errorf("cell = %+v", got)
	}
}

// TestSandboxEnvironmentValid: a sandbox-provider environment with a complete shape
// (pids included) and a boolean reuseLease loads, with its shape kept.
func TestSandboxEnvironmentValid(t *testing.T) {
	t.Parallel()
	a := mustReplace(t, baseA, "profiles:\n", `  - id: box
    label: Box
    driver: sandbox
    provider: sandbox
    lifecycle: {setup: create_via_api, probe: run_context_via_api, cleanup: delete_via_api_and_destroy_leases}
    expectedExecutionTarget: {kind: local}
    resources: {cpu: 2, memoryGiB: 1, diskGiB: 3, pids: 256}
    config: {reuseLease: false}
profiles:
`)
	c, err := loadFiles(map[string]string{"a.yaml": a, "b.yaml": baseB})
	if err != nil {
		t.Fatal(err)
	}
	var box *Environment
	for _, e := range c.Environments {
		if e.ID == "box" {
			box = e
		}
	}
	if box == nil || box.Resources == nil || *box.Resources != (Resources{CPU: 2, MemoryGiB: 1, DiskGiB: 3, PIDs: 256}) {
		t.Fatalf("box = %+v", box)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	huge := "# " + strings.Repeat("x", MaxFileBytes) + "\n"
	bomb := "profiles:\n  - id: p\n    driverConfig:\n      a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i, prev := 1, "a"; i < 9; i++ {
		name := fmt.Sprintf("a%d", i)
		bomb += fmt.Sprintf("      %s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n", name, name, prev, prev, prev, prev, prev, prev, prev, prev, prev, prev)
		prev = name
	}
	type row struct {
		name  string
		files func(t *testing.T) map[string]string
		// want are regexps every one of which must match some problem line; the
		// position prefix is built with at() where the line matters.
		want func(t *testing.T, files map[string]string) []string
		// absent must match no problem line (for example a secret's value).
		absent []string
	}
	ab := func(a, b string) map[string]string { return map[string]string{"a.yaml": a, "b.yaml": b} }
	rows := []row{
		{
			name:  "malformed YAML",
			files: func(t *testing.T) map[string]string { return ab(baseA, baseB+"  - id: [unclosed\n") },
			want: func(t *testing.T, f map[string]string) []string {
				return []string{`^b\.yaml:\d+: malformed YAML: `}
			},
		},
		{
			name: "wrong type",
			files: func(t *testing.T) map[string]string {
				return ab(baseA, mustReplace(t, baseB, "expectedMatrixSize: 1", "expectedMatrixSize: one"))
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{"^" + regexp.QuoteMeta(at(t, "b.yaml", f["b.yaml"], "expectedMatrixSize")) + `25: suites\[0\]\.expectedMatrixSize: expected an integer, got !!str "one"$`}
			},
		},
		{
			name: "warm lifecycle of a one-process-per-run driver",
			files: func(t *testing.T) map[string]string {
				return ab(mustReplace(t, baseA, "    driver: exec:codex\n", "    driver: exec:codex\n    runnerLifecycleMode: warm\n"), baseB)
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{`runnerLifecycleMode warm needs a session driver \(acp:<agent>, rpc:<agent> or app:<agent>\); driver exec:codex runs one process per run`}
			},
		},
		{
			name: "wrong type: scalar for a list",
			files: func(t *testing.T) map[string]string {
				return ab(baseA, mustReplace(t, baseB, "profiles: [agent]", "profiles: agent"))
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{"^" + regexp.QuoteMeta(at(t, "b.yaml", f["b.yaml"], "profiles: agent")) + `15: suites\[0\]\.profiles: expected a sequence`}
			},
		},
		{
			name: "unknown key is rejected",
			files: func(t *testing.T) map[string]string {
				return ab(baseA, mustReplace(t, baseB, "    label: Hello\n", "    label: Hello\n    colour: blue\n"))
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{"^" + regexp.QuoteMeta(at(t, "b.yaml", f["b.yaml"], "colour")) + `5: cases\[0\]: unknown key "colour" \(known keys: id, label, `}
			},
		},
		{
			name: "misspelt key gets a did-you-mean",
			files: func(t *testing.T) map[string]string {
				return ab(baseA, mustReplace(t, baseB, "    label: Hello\n", "    label: Hello\n    prompts: hi\n"))
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{"^" + regexp.QuoteMeta(at(t, "b.yaml", f["b.yaml"], "prompts")) + `5: cases\[0\]: unknown key "prompts" \(did you mean prompt\? known keys: id, label, `}
			},
		},
		{
			name: "raw sk- key in a nested map",
			files: func(t *testing.T) map[string]string {
				return ab(mustReplace(t, baseA, "    driverConfig:\n", "    driverConfig:\n      extra: {nested: {token: \"sk-proj-abcdefghijklmnop1234\"}}\n"), baseB)
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{"^" + regexp.QuoteMeta(at(t, "a.yaml", f["a.yaml"], "sk-proj")) + `\d+: contains a raw secret-looking value`}
			},
			absent: []string{"abcdefghijklmnop1234"},
		},
		{
			name: "apiKey plain string under an agent's env",
			files: func(t *testing.T) map[string]string {
				return ab(mustReplace(t, baseA, "      env:\n", "      env:\n        apiKey: \"x\"\n"), baseB)
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{"^" + regexp.QuoteMeta(at(t, "a.yaml", f["a.yaml"], "apiKey")) + `17: profile agent driverConfig\.env\.apiKey: an agent env value must be a secret reference`}
			},
		},
		{
			name: "credential-named key with a plain string outside env",
			files: func(t *testing.T) map[string]string {
				return ab(mustReplace(t, baseA, "    driverConfig:\n", "    driverConfig:\n      provider_access_token: hunter2\n"), baseB)
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{`a\.yaml:\d+:\d+: contains a raw credential at profile agent driverConfig\.provider_access_token`}
			},
			absent: []string{"hunter2"},
		},
		{
			name: "capability grants: unknown claim, duplicate, non-tool claim",
			files: func(t *testing.T) map[string]string {
				a := mustReplace(t, baseA, "    supportedEnvironments: [local]\n", "    supportedEnvironments: [local]\n    capabilityGrants: [governance:approvals:request, governance:approvals:request]\n")
				b := mustReplace(t, baseB, "    expectedRunCount: 1\n", "    expectedRunCount: 1\n    capabilityGrants: [root:everything, control_plane:budget]\n")
				return ab(a, b)
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{
					`^a\.yaml:\d+:\d+: profile agent capabilityGrants\[1\] "governance:approvals:request" is listed twice`,
					`^b\.yaml:\d+:\d+: case hello capabilityGrants\[0\] "root:everything" is not a grantable claim \(one of .*governance:approvals:request`,
					`^b\.yaml:\d+:\d+: case hello capabilityGrants\[1\] "control_plane:budget" is not a grantable claim`,
				}
			},
		},
		{
			name: "untitled case with a title",
			files: func(t *testing.T) map[string]string {
				return ab(baseA, mustReplace(t, baseB, "    expectedRunCount: 1\n", "    expectedRunCount: 1\n    untitled: true\n"))
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{`^b\.yaml:\d+:\d+: case hello is untitled: its task is created with an empty title, so title must be empty`}
			},
		},
		{
			name: "raw credential in definitionMetadata and in command args",
			files: func(t *testing.T) map[string]string {
				b := mustReplace(t, baseB, "    expectedMatrixSize: 1\n", "    expectedMatrixSize: 1\n    definitionMetadata: {notes: {ANTHROPIC_API_KEY: plain-value}}\n")
				b = mustReplace(t, b, "    matchers:\n", `    reference:
      turns:
        - trigger: assignment
          steps:
            - command: request_approval
              args: {approvalType: deploy, payload: {clientSecret: s3cr3t}}
    matchers:
`)
				return ab(baseA, b)
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{
					"^" + regexp.QuoteMeta(at(t, "b.yaml", f["b.yaml"], "plain-value")) + `\d+: contains a raw credential at suite core definitionMetadata\.notes\.ANTHROPIC_API_KEY`,
					"^" + regexp.QuoteMeta(at(t, "b.yaml", f["b.yaml"], "s3cr3t")) + `\d+: contains a raw credential at case hello reference turns\[0\] steps\[0\] args\.payload\.clientSecret`,
				}
			},
			absent: []string{"plain-value", "s3cr3t"},
		},
		{
			name: "secret_ref with a wrong type",
			files: func(t *testing.T) map[string]string {
				return ab(mustReplace(t, baseA, "{type: secret_ref,", "{type: secretref,"), baseB)
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{`a\.yaml:\d+:\d+: profile agent driverConfig\.env\.OPENAI_API_KEY: secret reference type must be "secret_ref", got "secretref"`}
			},
		},
		{
			name: "secret_ref naming an undeclared credential",
			files: func(t *testing.T) map[string]string {
				return ab(mustReplace(t, baseA, "secretId: OPENAI_API_KEY", "secretId: NOPE_KEY"), baseB)
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{`secretId "NOPE_KEY" is neither a declared credential nor a UUID`}
			},
		},
		{
			name: "duplicate ids across files",
			files: func(t *testing.T) map[string]string {
				f := ab(baseA, baseB)
				f["c.yaml"] = "profiles:\n" + baseA[strings.Index(baseA, "  - id: agent"):]
				return f
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{"^" + regexp.QuoteMeta(at(t, "c.yaml", f["c.yaml"], "id: agent")) + `9: duplicate profile id "agent" \(first declared at ` + regexp.QuoteMeta(at(t, "a.yaml", f["a.yaml"], "id: agent")) + `9\)$`}
			},
		},
		{
			name: "suite size disagrees with expectedMatrixSize",
			files: func(t *testing.T) map[string]string {
				return ab(baseA, mustReplace(t, baseB, "expectedMatrixSize: 1", "expectedMatrixSize: 2"))
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{"^" + regexp.QuoteMeta(at(t, "b.yaml", f["b.yaml"], "expectedMatrixSize")) + `25: suite core: expected 2 cells \(expectedMatrixSize\); the matrix has 1$`}
			},
		},
		{
			name: "excluded id that does not exist",
			files: func(t *testing.T) map[string]string {
				return ab(baseA, mustReplace(t, baseB, "    expectedMatrixSize: 1\n", "    expectedMatrixSize: 1\n    excludedExecutionIds: [core.agent.local.nope]\n"))
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{"^" + regexp.QuoteMeta(at(t, "b.yaml", f["b.yaml"], "core.agent.local.nope")) + `28: suite core excludes "core\.agent\.local\.nope", which is not in its matrix$`}
			},
		},
		{
			name: "unknown group",
			files: func(t *testing.T) map[string]string {
				return ab(baseA, mustReplace(t, baseB, "    label: Hello\n", "    label: Hello\n    groups: [core, nope]\n"))
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{"^" + regexp.QuoteMeta(at(t, "b.yaml", f["b.yaml"], "groups: [core, nope]")) + `20: case hello declares unknown group "nope"`}
			},
		},
		{
			name: "regex with a lookahead",
			files: func(t *testing.T) map[string]string {
				return ab(baseA, mustReplace(t, baseB, "      - {kind: message_exact, expected: \"{{marker}}\"}\n",
					"      - {kind: message_exact, expected: \"{{marker}}\"}\n      - {kind: message_regex, pattern: \"OK_(?=[0-9])\"}\n"))
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{"^" + regexp.QuoteMeta(at(t, "b.yaml", f["b.yaml"], "message_regex")) + `40: case hello matchers\[1\]: .*lookahead`}
			},
		},
		{
			name: "unknown normalize form",
			files: func(t *testing.T) map[string]string {
				return ab(baseA, mustReplace(t, baseB, "      - {kind: message_exact, expected: \"{{marker}}\"}\n",
					"      - {kind: message_exact, expected: \"{{marker}}\"}\n      - {kind: message_contains, expected: \"OK\", normalize: nfd}\n"))
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{"^" + regexp.QuoteMeta(at(t, "b.yaml", f["b.yaml"], "normalize: nfd")) + `61: case hello matchers\[1\]: matcher message_contains: normalize: normalize must be one of none, nfc, nfkc`}
			},
		},
		{
			name: "unknown schema format",
			files: func(t *testing.T) map[string]string {
				return ab(baseA, mustReplace(t, baseB, "      - {kind: message_exact, expected: \"{{marker}}\"}\n",
					"      - {kind: message_exact, expected: \"{{marker}}\"}\n      - kind: json_schema\n        schema:\n          type: object\n          properties:\n            when:\n              type: string\n              format: date-tme\n"))
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{"^" + regexp.QuoteMeta(at(t, "b.yaml", f["b.yaml"], "format: date-tme")) + `15: case hello matchers\[1\]: matcher json_schema: schema: format "date-tme" at /properties/when/format is not a format agentproof asserts`}
			},
		},
		{
			name: "relative schema ref",
			files: func(t *testing.T) map[string]string {
				return ab(baseA, mustReplace(t, baseB, "      - {kind: message_exact, expected: \"{{marker}}\"}\n",
					"      - {kind: message_exact, expected: \"{{marker}}\"}\n      - kind: json_schema\n        schema:\n          items:\n            $ref: ./shared/defs.json\n"))
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{"^" + regexp.QuoteMeta(at(t, "b.yaml", f["b.yaml"], "$ref: ./shared")) + `13: case hello matchers\[1\]: matcher json_schema: schema: schema refers to \$ref "\./shared/defs\.json" at /items/\$ref, outside the schema`}
			},
			absent: []string{"agentproof.invalid"},
		},
		{
			name: "huge file",
			files: func(t *testing.T) map[string]string {
				f := ab(baseA, baseB)
				f["huge.yaml"] = huge
				return f
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{`^huge\.yaml: file is larger than 4194304 bytes \(4 MiB\), the per-file limit`}
			},
		},
		{
			name:  "alias bomb",
			files: func(t *testing.T) map[string]string { return map[string]string{"bomb.yaml": bomb} },
			want: func(t *testing.T, f map[string]string) []string {
				return []string{`^bomb\.yaml:\d+:\d+: file expands to more than 1000000 YAML nodes`}
			},
		},
		{
			name: "unknown references",
			files: func(t *testing.T) map[string]string {
				b := mustReplace(t, baseB, "profiles: [agent]", "profiles: [agent, ghost]")
				b = mustReplace(t, b, "cases: [hello]", "cases: [hello, missing]")
				a := mustReplace(t, baseA, "supportedEnvironments: [local]", "supportedEnvironments: [local, mars]")
				a = mustReplace(t, a, "credential: OPENAI_API_KEY", "credential: DAYTONA_API_KEY")
				return ab(a, b)
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{
					`a\.yaml:\d+:\d+: profile agent supports unknown environment "mars"`,
					`a\.yaml:\d+:\d+: profile agent credential "DAYTONA_API_KEY" has scope "environment"`,
				}
			},
		},
		{
			name: "login file credentials",
			files: func(t *testing.T) map[string]string {
				a := mustReplace(t, baseA, "  - {id: DAYTONA_API_KEY, scope: environment}\n",
					"  - {id: DAYTONA_API_KEY, scope: environment}\n  - {id: GROK_AUTH_JSON, scope: profile, kind: login_file, loginFile: .grok/auth.json}\n"+
						"  - {id: BAD_LOGIN, scope: environment, kind: login_file, loginFile: ../auth.json}\n  - {id: NO_PATH, scope: profile, kind: login_file}\n"+
						"  - {id: ODD_PATH, scope: profile, loginFile: x.json}\n  - {id: ODD_KIND, scope: profile, kind: keychain}\n")
				a = mustReplace(t, a, "credential: OPENAI_API_KEY", "credential: GROK_AUTH_JSON")
				return ab(a, baseB)
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{
					`a\.yaml:\d+:\d+: credential BAD_LOGIN is a login file; a login file has scope profile`,
					`a\.yaml:\d+:\d+: credential BAD_LOGIN loginFile "\.\./auth\.json" must be a relative path below HOME`,
					`a\.yaml:\d+:\d+: credential NO_PATH loginFile "" must be a relative path below HOME`,
					`a\.yaml:\d+:\d+: credential ODD_PATH has loginFile but kind ""; loginFile needs kind login_file`,
					`a\.yaml:\d+:\d+: credential kind "keychain" is not one of`,
					`a\.yaml:\d+:\d+: profile agent credential "GROK_AUTH_JSON" is a login file, which is seeded into the HOME of an exec agent only; driver exec:codex launches with a HOME of its own`,
				}
			},
		},
		{
			name: "unknown suite references",
			files: func(t *testing.T) map[string]string {
				b := mustReplace(t, baseB, "profiles: [agent]", "profiles: [agent, ghost]")
				b = mustReplace(t, b, "cases: [hello]", "cases: [hello, missing]")
				return ab(baseA, b)
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{
					"^" + regexp.QuoteMeta(at(t, "b.yaml", f["b.yaml"], "ghost")) + `23: suite core names unknown profile "ghost"`,
					"^" + regexp.QuoteMeta(at(t, "b.yaml", f["b.yaml"], "missing")) + `20: suite core names unknown case "missing"`,
				}
			},
		},
		{
			name: "template errors",
			files: func(t *testing.T) map[string]string {
				b := mustReplace(t, baseB, `prompt: "Say {{marker}}"`, `prompt: "Say {{answer}}"`)
				b = mustReplace(t, b, `title: "Hello {{nonce}}"`, `title: "Hello {{nonce"`)
				b = mustReplace(t, b, `marker: "OK_{{nonce}}"`, `marker: "OK_{{nonce}}_{{marker}}"`)
				return ab(baseA, b)
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{`b\.yaml:\d+:\d+: case hello marker: template: at byte 0: variable "marker" is not defined here \(marker templates may use only \{\{nonce\}\}\)`}
			},
		},
		{
			name: "template errors in prompt and title",
			files: func(t *testing.T) map[string]string {
				b := mustReplace(t, baseB, `prompt: "Say {{marker}}"`, `prompt: "Say {{answer}}"`)
				b = mustReplace(t, b, `title: "Hello {{nonce}}"`, `title: "Hello {{nonce"`)
				return ab(baseA, b)
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{
					"^" + regexp.QuoteMeta(at(t, "b.yaml", f["b.yaml"], "title:")) + `12: case hello title: template: at byte 6: "\{\{" is not closed`,
					"^" + regexp.QuoteMeta(at(t, "b.yaml", f["b.yaml"], "prompt:")) + `13: case hello prompt: .*variable "answer" is not defined`,
				}
			},
		},
		{
			name: "duplicate key",
			files: func(t *testing.T) map[string]string {
				return ab(baseA, mustReplace(t, baseB, "    label: Hello\n", "    label: Hello\n    label: Again\n"))
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{`b\.yaml:4:5: cases\[0\]: duplicate key "label"`}
			},
		},
		{
			name: "matcher problems",
			files: func(t *testing.T) map[string]string {
				return ab(baseA, mustReplace(t, baseB, "      - {kind: message_exact, expected: \"{{marker}}\"}\n",
					"      - {kind: message_exactly, expected: \"{{marker}}\"}\n      - {kind: message_occurrences, expected: x}\n      - {kind: message_exact, expected: x, turn: 2}\n"))
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{
					`case hello matchers\[0\]: matcher message_exactly: kind`,
					`case hello matchers\[1\]: matcher message_occurrences: count`,
					"^" + regexp.QuoteMeta(at(t, "b.yaml", f["b.yaml"], "turn: 2")) + `50: case hello matchers\[2\]: turn 2 is past the case's 1 expected runs`,
				}
			},
		},
		{
			name: "reference script problems",
			files: func(t *testing.T) map[string]string {
				return ab(baseA, mustReplace(t, baseB, "    matchers:\n", `    reference:
      turns:
        - trigger: follow_up
          steps:
            - command: finish_taks
              args: {summary: x}
            - command: report_progress
              args: {text: x}
            - edit: {path: "../escape.txt", append: x}
            - {}
            - run: {command: ["{{nosuch}}"], timeoutMs: 600001}
            - {run: {command: [python3], timeoutMs: 1000}, edit: {path: a.txt, write: x}}
    matchers:
`))
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{
					`the first turn's trigger must be assignment`,
					`steps\[0\]: unknown command "finish_taks"`,
					`steps\[1\]: command report_progress needs args\.body`,
					`steps\[1\]: command report_progress has no argument "text"`,
					`steps\[2\] edit path "\.\./escape\.txt" must be a relative path inside the workspace`,
					`steps\[3\] needs a command, an edit, a wait or a run`,
					`steps\[4\] run command\[0\]: .*nosuch`,
					`steps\[4\] run timeoutMs 600001 must be 1…600000 ms`,
					`steps\[5\] has more than one of command, edit, wait and run`,
				}
			},
		},
		{
			name: "bad ids and enums",
			files: func(t *testing.T) map[string]string {
				b := mustReplace(t, baseB, "  - id: core\n", "  - id: Core.Suite\n")
				b = mustReplace(t, b, "flow: single_turn", "flow: single-turn")
				return ab(baseA, b)
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{`suite id "Core\.Suite" must be lower-case words`, `case hello flow "single-turn" is not a flow this agentproof plays \(did you mean single_turn\?\); the flows it plays: process_exit, question_resume_completion, single_turn$`}
			},
		},
		{
			name: "sandbox environment rules",
			files: func(t *testing.T) map[string]string {
				a := mustReplace(t, baseA, "profiles:\n", `  - id: box
    label: Box
    driver: local
    provider: sandbox
    lifecycle: {setup: create_via_api, probe: run_context_via_api, cleanup: delete_via_api_and_destroy_leases}
    expectedExecutionTarget: {kind: local}
    resources: {cpu: 1, memoryGiB: 1, diskGiB: 1}
    config: {reuseLease: "yes"}
  - id: box2
    label: Box 2
    driver: sandbox
    provider: sandbox
    lifecycle: {setup: create_via_api, probe: run_context_via_api, cleanup: delete_via_api_and_destroy_leases}
    expectedExecutionTarget: {kind: local}
    resources: {cpu: 1, memoryGiB: 1, diskGiB: 1, pids: -3}
profiles:
`)
				return ab(a, baseB)
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{
					`environment box has provider sandbox, which needs driver sandbox \(got "local"\)`,
					`sandbox environment box must pin resources\.pids`,
					`environment box config\.reuseLease must be true or false`,
					`environment box2 resources pids must be positive when set`,
				}
			},
		},
		{
			name: "container environment rules",
			files: func(t *testing.T) map[string]string {
				a := mustReplace(t, baseA, "profiles:\n", `  - id: ctr
    label: Container by tag
    driver: container
    provider: container
    lifecycle: {setup: create_via_api, probe: run_context_via_api, cleanup: delete_via_api_and_destroy_leases}
    expectedExecutionTarget: {kind: local}
    resources: {cpu: 1, memoryGiB: 1, diskGiB: 1, pids: 64}
    config: {image: "docker.io/library/busybox:1.36", workdir: "app"}
  - id: ctr2
    label: Container without image
    driver: local
    provider: container
    lifecycle: {setup: create_via_api, probe: run_context_via_api, cleanup: delete_via_api_and_destroy_leases}
    expectedExecutionTarget: {kind: local}
    resources: {cpu: 1, memoryGiB: 1, diskGiB: 1}
profiles:
`)
				return ab(a, baseB)
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{
					`environment ctr config\.image: image "docker\.io/library/busybox:1\.36" has no digest`,
					`environment ctr config\.workdir app must be an absolute, clean path`,
					`environment ctr2: a container environment needs driver container and provider container`,
					`container environment ctr2 must pin resources`,
					`container environment ctr2 needs config\.image`,
				}
			},
		},
		{
			name: "calibration verdicts",
			files: func(t *testing.T) map[string]string {
				return ab(baseA, mustReplace(t, baseB, "    expectedMatrixSize: 1\n", "    expectedMatrixSize: 1\n    expectedVerdicts: {agent: maybe, other: passed}\n"))
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{`expectedVerdicts\.agent "maybe" is not one of passed, failed, inconclusive`}
			},
		},
		{
			name: "ranking content hash",
			files: func(t *testing.T) map[string]string {
				f := ab(baseA, baseB)
				f["r.yaml"] = `rankings:
  - schema: agentproof.ranking/v1
    snapshotId: snap
    sourceUrl: https://example.invalid/models
    capturedAt: 2026-08-28T00:00:00.000Z
    contentHash: "0000000000000000000000000000000000000000000000000000000000000000"
    models:
      - {rank: 1, id: a/b, name: B, supportedParameters: [tools]}
`
				return f
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{`^r\.yaml:6:18: ranking snap contentHash 0{64} does not match its models \(computed [0-9a-f]{64}\)`}
			},
		},
		{
			name: "a .yml file is named, not ignored",
			files: func(t *testing.T) map[string]string {
				return map[string]string{"a.yaml": baseA, "b.yaml": baseB, "more/extra.yml": "cases: []\n"}
			},
			want: func(t *testing.T, f map[string]string) []string {
				return []string{`^more/extra\.yml: catalog directories read only \*\.yaml files, so this \*\.yml file was not read: rename it to extra\.yaml, or move it out of the catalog directory$`}
			},
		},
		{
			name:  "no files",
			files: func(t *testing.T) map[string]string { return map[string]string{"readme.txt": "x"} },
			want: func(t *testing.T, f map[string]string) []string {
				return []string{`has no \*\.yaml files`}
			},
		},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			files := r.files(t)
			_, err := loadFiles(files)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Load error = %v (%T), want *ValidationError", err, err)
			}
			var lines []string
			for _, p := range ve.Problems {
				lines = append(lines, p.String())
			}
			for _, w := range r.want(t, files) {
				re := regexp.MustCompile(w)
				found := false
				for _, l := range lines {
					if re.MatchString(l) {
						found = true
					}
				}
				if !found {
					t.Errorf("no problem matches %q; problems:\n%s", w, strings.Join(lines, "\n"))
				}
			}
			for _, a := range r.absent {
				if strings.Contains(err.Error(), a) {
					t.Errorf("problems repeat %q:\n%s", a, err)
				}
			}
		})
	}
}

// TestProblemsReportedTogether proves validation collects every problem instead of
// stopping at the first.
func TestProblemsReportedTogether(t *testing.T) {
	t.Parallel()
	a := mustReplace(t, baseA, "    label: Agent\n", "    label: Agent\n    colour: red\n")
	b := mustReplace(t, baseB, "    label: Hello\n", "    label: Hello\n    mood: ok\n")
	_, err := loadFiles(map[string]string{"a.yaml": a, "b.yaml": b})
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	if len(ve.Problems) != 2 || ve.Problems[0].File != "a.yaml" || ve.Problems[1].File != "b.yaml" {
		t.Fatalf("want the unknown keys of both files, in file order, got:\n%v", err)
	}

	// Semantic problems (once the files decode) are collected across declarations and
	// suites alike.
	a = mustReplace(t, baseA, "generation: native", "generation: future")
	b = mustReplace(t, baseB, "workMode: standard", "workMode: lazy")
	b = mustReplace(t, b, "profiles: [agent]", "profiles: [agent, ghost]")
	_, err = loadFiles(map[string]string{"a.yaml": a, "b.yaml": b})
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{`profile generation "future"`, `case workMode "lazy"`, `unknown profile "ghost"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("problems lack %q:\n%v", want, err)
		}
	}
}

// TestStructureProblemsDoNotHideOthers: an unknown key (a problem of one file's
// structure) does not stop validation: the other files' reference and value problems
// are reported with it in one run, the problems validation would repeat inside the
// file with the unknown key are not, and malformed YAML still stops validation (what
// it hides would make references look unknown).
func TestStructureProblemsDoNotHideOthers(t *testing.T) {
	t.Parallel()
	a := mustReplace(t, baseA, "    label: Agent\n", "    labl: Agent\n")
	b := mustReplace(t, baseB, "profiles: [agent]", "profiles: [agent, ghost]")
	b = mustReplace(t, b, "workMode: standard", "workMode: lazy")
	_, err := loadFiles(map[string]string{"a.yaml": a, "b.yaml": b})
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{`a.yaml:`, `unknown key "labl" (did you mean label?`, `b.yaml:`, `unknown profile "ghost"`, `case workMode "lazy"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("problems lack %q:\n%v", want, err)
		}
	}
	for _, p := range ve.Problems {
		if p.File == "a.yaml" && !strings.Contains(p.Message, "unknown key") {
			t.Errorf("a problem repeats the unknown key's consequence: %s", p)
		}
	}
	_, err = loadFiles(map[string]string{"a.yaml": a + "bad: [\n", "b.yaml": b})
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "ghost") || !strings.Contains(err.Error(), "malformed YAML") {
		t.Errorf("with malformed YAML, want only the parse problems:\n%v", err)
	}
}

// TestUnknownFlowRefused: with the flows loading is given (WithFlows), a case whose
// flow is none of them is a problem at the case's flow naming the flows; without the
// option no flow is refused.
func TestUnknownFlowRefused(t *testing.T) {
	t.Parallel()
	if _, err := Default(); err != nil {
		t.Fatalf("no flows given: %v", err)
	}
	_, err := Default(WithFlows(testFlows...))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want a *ValidationError", err)
	}
	var warm *Problem
	for i, p := range ve.Problems {
		if strings.Contains(p.Message, `flow "warm_three_turn"`) {
			warm = &ve.Problems[i]
		}
		if strings.Contains(p.Message, "is not a flow this agentproof plays") && !strings.HasSuffix(p.Message, "the flows it plays: process_exit, question_resume_completion, single_turn") {
			t.Errorf("problem does not name the flows: %s", p)
		}
	}
	if warm == nil || warm.File != "catalog/default/cases.yaml" || warm.Line == 0 {
		t.Fatalf("no positioned problem for the warm case: %v", ve.Problems)
	}
}

// TestFlowContracts: each rule a flow contract may state is checked at the field it
// concerns: the fields a flow needs (a string, a list with a number of entries, a
// mapping with its parts, a positive turn timeout), the flow-only fields only the
// flows that accept them may set, the flow's own Check, a fixture program's flow
// (no task fields, no untitled case, fixture drivers only) and the turns of a
// reference script when the flow retries a killed run.
func TestFlowContracts(t *testing.T) {
	t.Parallel()
	flows := append(slices.Clone(testFlows),
		FlowContract{Name: "needy", Needs: []Need{
			{Field: FieldRevisionRequest}, {Field: FieldWorkspaceFile, What: "the readiness file"},
			{Field: FieldFollowups, Count: 2}, {Field: FieldTurnMarkers}, {Field: FieldTurnTimeout}, {Field: FieldPlanMarkers},
		}},
		FlowContract{Name: "picky", Needs: []Need{{Field: FieldFollowups, Count: 1, What: "the answer"}}, Check: func(cs *Case, p CaseProblems) {
			if len(cs.Followups) == 1 && strings.Contains(cs.Followups[0], "{{") {
				p.Add(&cs.Followups[0], "followups[0] may use no template variable")
			}
		}},
		FlowContract{Name: "retrying", RetriesKilledRun: true},
	)
	for _, tt := range []struct {
		name, from, to string
		want           []string // regular expressions, one problem each
	}{
		{"every need", "flow: single_turn", "flow: needy", []string{
			`^b\.yaml:2:5: case hello: flow needy needs revisionRequest$`,
			`^b\.yaml:2:5: case hello: flow needy needs workspaceFile \(the readiness file\)$`,
			`^b\.yaml:2:5: case hello: flow needy needs followups with exactly 2 entries, got 0$`,
			`^b\.yaml:2:5: case hello: flow needy needs turnMarkers with at least one entry$`,
			`^b\.yaml:2:5: case hello: flow needy needs a positive turnTimeoutMs$`,
			`^b\.yaml:2:5: case hello: flow needy needs planMarkers \{draft, revised\}$`,
		}},
		{"a list of the wrong length, at the list", "flow: single_turn", "flow: picky\n    followups: [a, b]", []string{
			`^b\.yaml:6:16: case hello: flow picky needs followups with exactly 1 entry \(the answer\), got 2$`,
		}},
		{"the flow's own check", "flow: single_turn", "flow: picky\n    followups: [\"{{marker}}\"]", []string{
			`^b\.yaml:6:17: case hello: flow picky: followups\[0\] may use no template variable$`,
		}},
		{"a flow-only field of another flow", "flow: single_turn", "flow: single_turn\n    restartServerBeforeQuestionAnswer: true", []string{
			`^b\.yaml:6:40: case hello: restartServerBeforeQuestionAnswer applies only to flow question_resume_completion$`,
		}},
		{"a mapping a flow needs", "flow: single_turn", "flow: question_resume_completion\n    questionAnswer: {optionLabel: Yes}", []string{
			`case hello questionAnswer expectedMarker is required$`,
		}},
		{"an untitled case of a fixture program's flow", "flow: single_turn", "flow: process_exit\n    untitled: true", []string{
			`case hello is untitled: its task is created with an empty title, so title must be empty`,
			`^b\.yaml:6:15: case hello: untitled applies only to cases whose agent works a task$`,
		}},
		{"a fixture program's flow with another driver", "flow: single_turn", "flow: process_exit", []string{
			`cell core\.agent\.local\.hello pairs driver exec:codex with flow process_exit; fixture drivers run exactly the flows of the fixture programs \(process_exit\)$`,
		}},
		{"a reference script of a retried run", "flow: single_turn", "flow: retrying\n    reference: {turns: [{trigger: assignment, steps: [{command: finish_task, args: {summary: x}}]}]}", []string{
			`case hello reference has 1 turns; expectedRunCount is 1 \(one turn per run that does not retry a killed one: 0\)$`,
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := loadFiles(map[string]string{"a.yaml": baseA, "b.yaml": mustReplace(t, baseB, tt.from, tt.to)}, flows...)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a *ValidationError", err)
			}
			if len(ve.Problems) != len(tt.want) {
				t.Errorf("%d problems, want %d:\n%v", len(ve.Problems), len(tt.want), err)
			}
			for _, w := range tt.want {
				re := regexp.MustCompile(w)
				if !slices.ContainsFunc(ve.Problems, func(p Problem) bool { return re.MatchString(p.String()) }) {
					t.Errorf("no problem matches %s:\n%v", w, err)
				}
			}
		})
	}
	for _, bad := range []FlowContract{{}, {Name: "x", Needs: []Need{{Field: FieldRestartServer}}}, {Name: "x", Accepts: []CaseField{FieldFollowups}}} {
		if bad.Valid() == nil {
			t.Errorf("contract %+v is valid", bad)
		}
	}
	for _, fc := range flows {
		if err := fc.Valid(); err != nil {
			t.Error(err)
		}
	}
}

// TestCellCapabilityGrants: a cell's grants are the profile's and the case's, sorted
// and without duplicates; nil when neither declares any; an untitled case needs no
// title.
func TestCellCapabilityGrants(t *testing.T) {
	t.Parallel()
	a := mustReplace(t, baseA, "    supportedEnvironments: [local]\n", "    supportedEnvironments: [local]\n    capabilityGrants: [governance:approvals:request, delegation:tasks:create]\n")
	b := mustReplace(t, baseB, "    expectedRunCount: 1\n", "    expectedRunCount: 1\n    capabilityGrants: [governance:approvals:request, dependencies:write]\n")
	c, err := loadFiles(map[string]string{"a.yaml": a, "b.yaml": b})
	if err != nil {
		t.Fatal(err)
	}
	got := c.Cell("core.agent.local.hello").CapabilityGrants
	want := []string{"delegation:tasks:create", "dependencies:write", "governance:approvals:request"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("grants %v, want %v", got, want)
	}
	untitled := mustReplace(t, mustReplace(t, baseB, "    title: \"Hello {{nonce}}\"\n", ""), "    expectedRunCount: 1\n", "    expectedRunCount: 1\n    untitled: true\n")
	c, err = loadFiles(map[string]string{"a.yaml": baseA, "b.yaml": untitled})
	if err != nil {
		t.Fatal(err)
	}
	if cell := c.Cell("core.agent.local.hello"); cell.CapabilityGrants != nil || !cell.Case.Untitled {
		t.Errorf("grants %v untitled %v, want none and untitled", cell.CapabilityGrants, cell.Case.Untitled)
	}
}

// TestLoginFileProfile: an exec profile whose credential is a login file loads, and its
// cells name the credential (Cell.LoginFile) for the fixtures stage to seed; a secret
// reference binding it to a variable and a live provider's envVar naming it are refused.
func TestLoginFileProfile(t *testing.T) {
	t.Parallel()
	a := mustReplace(t, baseA, "  - {id: DAYTONA_API_KEY, scope: environment}\n",
		"  - {id: DAYTONA_API_KEY, scope: environment}\n  - {id: GROK_AUTH_JSON, scope: profile, kind: login_file, loginFile: .grok/auth.json}\n")
	a = mustReplace(t, a, "credential: OPENAI_API_KEY", "credential: GROK_AUTH_JSON")
	a = mustReplace(t, a, "driver: exec:codex\n    driverConfig:\n      env:\n        OPENAI_API_KEY: {type: secret_ref, secretId: OPENAI_API_KEY, version: latest}\n",
		"driver: exec\n    driverConfig: {command: /usr/bin/true}\n")
	c, err := loadFiles(map[string]string{"a.yaml": a, "b.yaml": baseB})
	if err != nil {
		t.Fatal(err)
	}
	cell := c.Cells[0]
	if cell.LoginFile == nil || cell.LoginFile.ID != "GROK_AUTH_JSON" || cell.LoginFile.LoginFile != ".grok/auth.json" {
		t.Fatalf("cell %s LoginFile = %+v, want GROK_AUTH_JSON at .grok/auth.json", cell.ID, cell.LoginFile)
	}
	if !slices.Contains(cell.RequiredCredentials, "GROK_AUTH_JSON") {
		t.Errorf("RequiredCredentials = %v, want GROK_AUTH_JSON among them", cell.RequiredCredentials)
	}
	bound := mustReplace(t, a, "driverConfig: {command: /usr/bin/true}", "driverConfig: {command: /usr/bin/true, env: {AUTH: {type: secret_ref, secretId: GROK_AUTH_JSON, version: latest}}}")
	if _, err := loadFiles(map[string]string{"a.yaml": bound, "b.yaml": baseB}); err == nil || !strings.Contains(err.Error(), `secret reference secretId "GROK_AUTH_JSON" is a login file`) {
		t.Errorf("an env secret reference to a login file: %v, want the refusal", err)
	}
	live := mustReplace(t, a, "driverConfig: {command: /usr/bin/true}", "driverConfig: {command: /usr/bin/true, live: {envVar: GROK_AUTH_JSON}}")
	if _, err := loadFiles(map[string]string{"a.yaml": live, "b.yaml": baseB}); err == nil || !strings.Contains(err.Error(), `live.envVar "GROK_AUTH_JSON" is a login file`) {
		t.Errorf("a live envVar naming a login file: %v, want the refusal", err)
	}
}
