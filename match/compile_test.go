package match

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/theory/jsonpath"
)

func intp(n int) *int { return &n }

func TestCompileAccepts(t *testing.T) {
	t.Parallel()
	specs := []Spec{
		{Kind: KindMessageExact, Expected: "PAPERCLIP_E2E_OK_1"},
		{Kind: KindMessageExact, Expected: ""},
		{Kind: KindMessageContains, Expected: "ok", Turn: 2},
		{Kind: KindMessageOccurrences, Expected: "x", Count: intp(0)},
		{Kind: KindMessageRegex, Pattern: `^PC_H_\d+$`, Flags: "ms"},
		{Kind: KindMessageRegex, Pattern: `(?P<n>a)|(?<m>b)`},
		{Kind: KindMessageOrdered, Expected: []any{"T1", "T2"}},
		{Kind: KindMessageOrdered, Expected: []string{"T1"}},
		{Kind: KindIssueStatus, Expected: "done"},
		{Kind: KindRunStatus, Expected: "succeeded"},
		{Kind: KindRuntimeMode, Expected: "native"},
		{Kind: KindEnvironment, Expected: "local"},
		{Kind: KindRuntimeMetadata, Expected: map[string]any{RuntimeCLIName: "codex", RuntimeBinarySHA256: strings.Repeat("0", 64)}},
		{Kind: KindFileExists, Path: "./dir/a.txt"},
		{Kind: KindFileExact, Path: "daytona-warm-1.txt", Expected: "T1-1\n"},
		{Kind: KindFileContains, Path: "a..b/c", Expected: ""},
		{Kind: KindArtifactExists, Name: "report"},
		{Kind: KindArtifactExists, Name: "report", MimeType: "text/html; charset=utf-8"},
		{Kind: KindArtifactExists, Name: "report", SHA256: strings.Repeat("ab", 32), Expected: "text", Normalize: NormalizeNone},
		{Kind: KindFileExists, Path: "bin/blob.bin", Source: SourceAgentHome, SHA256: strings.Repeat("0", 64)},
		{Kind: KindFileExact, Path: "AGENTS.md", Source: SourceWorkspace, Expected: "x"},
		{Kind: KindJSONPath, Path: "$.issue.status", Expected: "done"},
		{Kind: KindJSONPath, Path: "runs.0.status", Expected: "succeeded"},
		{Kind: KindJSONPath, Path: "$.a", Expected: map[string]any{"b": []any{1, "x", nil}}},
		{Kind: KindJSONSchema, Schema: map[string]any{"type": "object", "required": []any{"issue"}}},
		{Kind: KindJSONSchema, Schema: true},
	}
	for _, s := range specs {
		m, err := Compile(s)
		if err != nil {
			t.Errorf("Compile(%+v): %v", s, err)
			continue
		}
		if m.Kind() != s.Kind {
			t.Errorf("Kind() = %q, want %q", m.Kind(), s.Kind)
		}
	}
}

func TestCompileRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		spec      Spec
		field     string
		construct string
		message   string // substring of the message
	}{
		{"no kind", Spec{}, "kind", "", "kind is required"},
		{"unknown kind", Spec{Kind: "message_fuzzy"}, "kind", "", `unknown kind "message_fuzzy"`},
		{"exact missing expected", Spec{Kind: KindMessageExact}, "expected", "", "expected is required"},
		{"exact non-string", Spec{Kind: KindMessageExact, Expected: 42}, "expected", "", "not a number; quote it"},
		{"unused field", Spec{Kind: KindIssueStatus, Expected: "done", Path: "x"}, "path", "", "not used by kind issue_status"},
		{"sha256 not hex", Spec{Kind: KindFileExists, Path: "a", SHA256: strings.Repeat("A", 64)}, "sha256", "", "64 lower-case hex digits"},
		{"sha256 short", Spec{Kind: KindArtifactExists, Name: "a", SHA256: "abc"}, "sha256", "", "64 lower-case hex digits"},
		{"encoding unknown", Spec{Kind: KindFileExact, Path: "a", Expected: "00", Encoding: "base64"}, "encoding", "", "must be text (the default) or hex"},
		{"encoding hex not hex", Spec{Kind: KindArtifactExists, Name: "a", Expected: "0g", Encoding: EncodingHex}, "expected", "", "hexadecimal form of the bytes"},
		{"encoding hex normalised", Spec{Kind: KindFileExact, Path: "a", Expected: "00", Encoding: EncodingHex, Normalize: NormalizeNFC}, "normalize", "", "does not apply to bytes"},
		{"encoding on file_contains", Spec{Kind: KindFileContains, Path: "a", Expected: "00", Encoding: EncodingHex}, "encoding", "", "not used by kind file_contains"},
		{"unknown source", Spec{Kind: KindFileExists, Path: "a", Source: "s3"}, "source", "", "source must be workspace"},
		{"source on artifacts", Spec{Kind: KindArtifactExists, Name: "a", Source: SourceAgentHome}, "source", "", "not used by kind artifact_exists"},
		{"sha256 on a message", Spec{Kind: KindMessageExact, Expected: "x", SHA256: strings.Repeat("0", 64)}, "sha256", "", "not used by kind message_exact"},
		{"artifact expected not text", Spec{Kind: KindArtifactExists, Name: "a", Expected: 3}, "expected", "", "not a number"},
		{"negative turn", Spec{Kind: KindMessageContains, Expected: "x", Turn: -1}, "turn", "", "turn must be 1 or more"},
		{"turn on status", Spec{Kind: KindRunStatus, Expected: "x", Turn: 1}, "turn", "", "not used"},
		{"occurrences no count", Spec{Kind: KindMessageOccurrences, Expected: "x"}, "count", "", "count is required"},
		{"occurrences negative", Spec{Kind: KindMessageOccurrences, Expected: "x", Count: intp(-1)}, "count", "", "0 or more"},
		{"regex no pattern", Spec{Kind: KindMessageRegex}, "pattern", "", "pattern is required"},
		{"regex bad flag", Spec{Kind: KindMessageRegex, Pattern: "a", Flags: "g"}, "flags", "", `flag 'g' is not supported`},
		{"regex repeated flag", Spec{Kind: KindMessageRegex, Pattern: "a", Flags: "ii"}, "flags", "", "repeated"},
		{"regex lookahead", Spec{Kind: KindMessageRegex, Pattern: `OK(?=_\d)`}, "pattern", "lookahead", "uses a lookahead"},
		{"regex negative lookahead", Spec{Kind: KindMessageRegex, Pattern: `^(?!error)`}, "pattern", "lookahead", "lookahead"},
		{"regex lookbehind", Spec{Kind: KindMessageRegex, Pattern: `(?<=PC_)H`}, "pattern", "lookbehind", "lookbehind"},
		{"regex negative lookbehind", Spec{Kind: KindMessageRegex, Pattern: `(?<!x)y`}, "pattern", "lookbehind", "lookbehind"},
		{"regex backreference", Spec{Kind: KindMessageRegex, Pattern: `(\w)\1`}, "pattern", "backreference", "backreference"},
		{"regex named backreference", Spec{Kind: KindMessageRegex, Pattern: `(?<a>x)\k<a>`}, "pattern", "backreference", "backreference"},
		{"regex plain syntax error", Spec{Kind: KindMessageRegex, Pattern: `a(`}, "pattern", "", "missing closing )"},
		{"regex lookahead text inside class is not lookahead", Spec{Kind: KindMessageRegex, Pattern: `[(?=](`}, "pattern", "", "not a valid RE2"},
		{"ordered missing", Spec{Kind: KindMessageOrdered}, "expected", "", "list of texts"},
		{"ordered empty", Spec{Kind: KindMessageOrdered, Expected: []any{}}, "expected", "", "at least one"},
		{"ordered not list", Spec{Kind: KindMessageOrdered, Expected: "T1"}, "expected", "", "must be a list"},
		{"ordered item not string", Spec{Kind: KindMessageOrdered, Expected: []any{"a", 2}}, "expected", "", "expected[1] must be a string"},
		{"status empty", Spec{Kind: KindIssueStatus, Expected: ""}, "expected", "", "must not be empty"},
		{"runtime mode", Spec{Kind: KindRuntimeMode, Expected: "hybrid"}, "expected", "", `"legacy" or "native"`},
		{"runtime metadata not an object", Spec{Kind: KindRuntimeMetadata, Expected: "codex"}, "expected", "", "object of runtime keys"},
		{"runtime metadata empty", Spec{Kind: KindRuntimeMetadata, Expected: map[string]any{}}, "expected", "", "object of runtime keys"},
		{"runtime metadata unknown key", Spec{Kind: KindRuntimeMetadata, Expected: map[string]any{"colour": "blue"}}, "expected", "", `unknown runtime key "colour"`},
		{"runtime metadata not a string", Spec{Kind: KindRuntimeMetadata, Expected: map[string]any{RuntimeCLIVersion: 1}}, "expected", "", "must be a non-empty string"},
		{"file no path", Spec{Kind: KindFileExists}, "path", "", "path is required"},
		{"file absolute", Spec{Kind: KindFileExists, Path: "/etc/passwd"}, "path", "", "absolute"},
		{"file windows absolute", Spec{Kind: KindFileExists, Path: `C:\x`}, "path", "", "absolute"},
		{"file dotdot", Spec{Kind: KindFileExact, Path: "a/../../b", Expected: "x"}, "path", "", `contains ".."`},
		{"file root", Spec{Kind: KindFileExists, Path: "./"}, "path", "", "workspace root"},
		{"file exact no expected", Spec{Kind: KindFileExact, Path: "a"}, "expected", "", "expected is required"},
		{"artifact no name", Spec{Kind: KindArtifactExists}, "name", "", "name is required"},
		{"artifact bad mime", Spec{Kind: KindArtifactExists, Name: "a", MimeType: "not a type"}, "mimeType", "", "not a media type"},
		{"json path missing", Spec{Kind: KindJSONPath, Expected: 1}, "path", "", "path is required"},
		{"json path bad", Spec{Kind: KindJSONPath, Path: "$.a[", Expected: 1}, "path", "", "not a valid JSONPath"},
		{"json path no expected", Spec{Kind: KindJSONPath, Path: "$.a"}, "expected", "", "expected is required"},
		{"json path unencodable", Spec{Kind: KindJSONPath, Path: "$.a", Expected: map[any]any{1: 2}}, "expected", "", "cannot be encoded"},
		{"normalize unknown", Spec{Kind: KindMessageExact, Expected: "x", Normalize: "nfd"}, "normalize", "", "must be one of none, nfc, nfkc"},
		{"normalize on regex", Spec{Kind: KindMessageRegex, Pattern: "x", Normalize: "nfc"}, "normalize", "", "not used by kind message_regex"},
		{"normalize on status", Spec{Kind: KindIssueStatus, Expected: "done", Normalize: "none"}, "normalize", "", "not used"},
		{"schema missing", Spec{Kind: KindJSONSchema}, "schema", "", "schema is required"},
		{"schema not map", Spec{Kind: KindJSONSchema, Schema: []any{1}}, "schema", "", "must be a map"},
		{"schema invalid", Spec{Kind: KindJSONSchema, Schema: map[string]any{"type": 5}}, "schema", "", "not a valid JSON Schema"},
		{"schema file ref", Spec{Kind: KindJSONSchema, Schema: map[string]any{"$ref": "file:///etc/passwd"}}, "schema", "", "self-contained"},
		{"schema remote ref", Spec{Kind: KindJSONSchema, Schema: map[string]any{"$ref": "https://example.com/s.json"}}, "schema", "", "self-contained"},
		{"schema unknown format", Spec{Kind: KindJSONSchema, Schema: map[string]any{"format": "date-tme"}}, "schema", "", `format "date-tme" at /format is not a format agentproof asserts`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Compile(tt.spec)
			if err == nil {
				t.Fatalf("Compile(%+v) succeeded", tt.spec)
			}
			if m.Kind() != "" {
				t.Errorf("failed Compile returned a usable matcher")
			}
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not *SpecError: %v", err, err)
			}
			if se.Field != tt.field || se.Construct != tt.construct || se.Kind != tt.spec.Kind {
				t.Errorf("got kind %q field %q construct %q, want %q %q %q", se.Kind, se.Field, se.Construct, tt.spec.Kind, tt.field, tt.construct)
			}
			if !strings.Contains(se.Message, tt.message) {
				t.Errorf("message %q does not contain %q", se.Message, tt.message)
			}
			if !strings.Contains(err.Error(), se.Field+": ") {
				t.Errorf("Error() %q does not name the field", err.Error())
			}
		})
	}
}

// TestSchemaFormatsAsserted: every format of SchemaFormats is asserted (an invalid value
// fails), so the list never names a format the library would ignore; under draft
// 2020-12 that is not the default.
func TestSchemaFormatsAsserted(t *testing.T) {
	t.Parallel()
	invalid := map[string]string{
		"date": "2026-13-45", "date-time": "yesterday", "duration": "P1X", "email": "not an address",
		"hostname": "-bad-.example", "ipv4": "300.1.1.1", "ipv6": "::g", "iri": "no scheme",
		"iri-reference": "%zz", "json-pointer": "no-slash", "period": "x/y", "regex": "(",
		"relative-json-pointer": "/a", "semver": "1.x", "time": "25:00:00Z", "uri": "no scheme",
		"uri-reference": "%zz", "uri-template": "{", "uuid": "123",
	}
	if len(invalid) != len(SchemaFormats) {
		t.Fatalf("%d invalid samples for %d formats", len(invalid), len(SchemaFormats))
	}
	for _, f := range SchemaFormats {
		m, err := Compile(Spec{Kind: KindJSONSchema, Schema: map[string]any{"format": f}})
		if err != nil {
			t.Fatalf("format %s: %v", f, err)
		}
		v, ok := invalid[f]
		if !ok {
			t.Fatalf("no invalid sample for format %s", f)
		}
		doc, _ := json.Marshal(v)
		if o := m.Evaluate(&Observation{JSON: doc}); o.Passed || o.NotReached {
			t.Errorf("format %s accepted %q: %s", f, v, o.Detail)
		}
	}
}

// TestSchemaRefusalNamesTheRef: a refused $ref (relative, remote, under another $id)
// and a foreign $schema are reported as written and where, never as the internal base
// URL; several unknown formats are each reported with their pointer.
func TestSchemaRefusalNamesTheRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		schema  map[string]any
		message string
		pointer string
	}{
		{map[string]any{"$ref": "./shared/defs.json"}, `$ref "./shared/defs.json" at /$ref`, "/$ref"},
		{map[string]any{"properties": map[string]any{"a/b": map[string]any{"$ref": "../x.json#/foo"}}}, `$ref "../x.json#/foo" at /properties/a~1b/$ref`, "/properties/a~1b/$ref"},
		{map[string]any{"$id": "https://example.com/root/", "items": map[string]any{"$ref": "defs.json"}}, `$ref "defs.json" at /items/$ref`, "/items/$ref"},
		{map[string]any{"$schema": "https://example.com/meta"}, `$schema "https://example.com/meta" at /$schema`, "/$schema"},
	}
	for _, tt := range tests {
		_, err := Compile(Spec{Kind: KindJSONSchema, Schema: tt.schema})
		var se *SpecError
		if !errors.As(err, &se) {
			t.Fatalf("%v: err = %v", tt.schema, err)
		}
		if !strings.Contains(se.Message, tt.message) || strings.Contains(se.Message, "agentproof.invalid") || se.Pointer != tt.pointer {
			t.Errorf("%v: message %q pointer %q; want %q at %q", tt.schema, se.Message, se.Pointer, tt.message, tt.pointer)
		}
	}
	// an internal reference and an embedded resource are fine
	for _, ok := range []map[string]any{
		{"$defs": map[string]any{"n": map[string]any{"type": "integer"}}, "$ref": "#/$defs/n"},
		{"$defs": map[string]any{"d": map[string]any{"$id": "defs.json", "type": "string"}}, "$ref": "defs.json"},
	} {
		if _, err := Compile(Spec{Kind: KindJSONSchema, Schema: ok}); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	_, err := CompileAll([]Spec{{Kind: KindJSONSchema, Schema: map[string]any{"properties": map[string]any{
		"a": map[string]any{"format": "phone"}, "b": map[string]any{"items": map[string]any{"format": "colour"}}}}}})
	var all SpecErrors
	if !errors.As(err, &all) || len(all) != 2 || all[0].Pointer != "/properties/a/format" || all[1].Pointer != "/properties/b/items/format" {
		t.Errorf("unknown formats: %v", err)
	}
}

func TestCompileAllCollectsEveryProblem(t *testing.T) {
	t.Parallel()
	specs := []Spec{
		{Kind: KindMessageExact, Expected: "ok"},
		{Kind: KindMessageRegex, Pattern: `a(?=b)`, Flags: "x"},
		{Kind: "bogus"},
		{Kind: KindFileExact, Path: "/abs"},
	}
	ms, err := CompileAll(specs)
	if ms != nil {
		t.Fatalf("CompileAll returned matchers despite errors")
	}
	var all SpecErrors
	if !errors.As(err, &all) {
		t.Fatalf("error %T is not SpecErrors", err)
	}
	type key struct {
		index int
		field string
	}
	var got []key
	for _, e := range all {
		got = append(got, key{e.Index, e.Field})
	}
	want := []key{{1, "flags"}, {2, "kind"}, {3, "path"}, {3, "expected"}}
	if len(got) != len(want) {
		t.Fatalf("problems %v, want %v\n%v", got, want, err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("problem %d = %v, want %v", i, got[i], want[i])
		}
	}
	var one *SpecError
	if !errors.As(err, &one) || one.Index != 1 {
		t.Errorf("errors.As(*SpecError) = %+v, want the first problem (index 1)", one)
	}
	if !strings.Contains(err.Error(), "matchers[3]: matcher file_exact: path:") {
		t.Errorf("Error() lacks index prefix:\n%s", err)
	}

	ok, err := CompileAll(specs[:1])
	if err != nil || len(ok) != 1 || ok[0].Kind() != KindMessageExact {
		t.Fatalf("CompileAll(valid) = %v, %v", ok, err)
	}
}

func TestLegacyPathToJSONPath(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"$.issue.status", "$.issue.status"},
		{"issue.status", "$['issue']['status']"},
		{"runs.0.status", "$['runs']['0',0]['status']"},
		{"a..b.", "$['a']['b']"},
		{"", "$"},
		{".", "$"},
		{"it's.a\\b", `$['it\'s']['a\\b']`},
		{"01.x", "$['01']['x']"},
	}
	for _, tt := range tests {
		got := LegacyPathToJSONPath(tt.in)
		if got != tt.want {
			t.Errorf("LegacyPathToJSONPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if _, err := jsonpath.Parse(got); err != nil {
			t.Errorf("converted %q does not parse: %v", got, err)
		}
	}
}

func TestKinds(t *testing.T) {
	t.Parallel()
	ks := Kinds()
	if len(ks) != 25 {
		t.Fatalf("Kinds() has %d kinds, want the 15 of docs/matchers.md's first table plus runtime_metadata, file_absent, plan_revisions, blocker_guidance, process_identity, no_mutation, permission_order, task_title, chat_handoff and command", len(ks))
	}
	for _, k := range ks {
		if !k.Valid() {
			t.Errorf("Kinds() lists %q, which is not Valid", k)
		}
		if kindSpecs[k].eval == nil {
			t.Errorf("kind %q has no evaluation in kindSpecs", k)
		}
	}
	if len(kindSpecs) != len(ks) {
		t.Errorf("kindSpecs has %d rows, Kinds() %d kinds: a row without its kind or a kind listed twice", len(kindSpecs), len(ks))
	}
	ks[0] = "mutated"
	if Kinds()[0] != KindMessageExact {
		t.Errorf("Kinds() shares its backing array")
	}
}

// TestKindWireForm: a Kind is the plain string in JSON, both ways; a string outside the
// typed set decodes as written, is not Valid, and Compile refuses it naming the kind.
func TestKindWireForm(t *testing.T) {
	t.Parallel()
	js, err := json.Marshal(Spec{Kind: KindFileExists, Path: "a.txt"})
	if err != nil || string(js) != `{"kind":"file_exists","path":"a.txt"}` {
		t.Fatalf("Marshal = %s, %v", js, err)
	}
	var spec Spec
	if err := json.Unmarshal([]byte(`{"kind":"message_fuzzy","expected":"x"}`), &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Kind != "message_fuzzy" || spec.Kind.Valid() {
		t.Fatalf("decoded kind %q (valid %v)", spec.Kind, spec.Kind.Valid())
	}
	_, err = Compile(spec)
	var se *SpecError
	if !errors.As(err, &se) || se.Kind != "message_fuzzy" || se.Field != "kind" {
		t.Fatalf("Compile(message_fuzzy) = %v", err)
	}
	m, err := Compile(Spec{Kind: KindMessageExact, Expected: "x"})
	if err != nil {
		t.Fatal(err)
	}
	o := Evaluate([]Matcher{m}, &Observation{})
	if js, _ := json.Marshal(o[0]); !strings.HasPrefix(string(js), `{"kind":"message_exact",`) {
		t.Errorf("Outcome JSON = %s", js)
	}
}
