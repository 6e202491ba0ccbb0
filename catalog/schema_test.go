package catalog

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/match"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	const url = "https://github.com/agentproof/agentproof/catalog/schema/catalog.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// yamlDocsAsJSON converts every document of a YAML file to a JSON value as the schema
// validator wants it.
func yamlDocsAsJSON(t *testing.T, name string, data []byte) []any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []any
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ps := &problems{limit: maxProblems}
		d := &decoder{file: name, ps: ps, pos: map[any]Pos{}, raw: map[any]*yaml.Node{}}
		v := d.plain(n.Content[0])
		if err := ps.err(); err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		j, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, j)
	}
}

// TestShippedCatalogsMatchSchema validates every shipped catalog file (the embedded
// default and the test catalogs) against catalog/schema/catalog.schema.json.
func TestShippedCatalogsMatchSchema(t *testing.T) {
	t.Parallel()
	schema := compileSchema(t)
	files := map[string][]byte{}
	fs.WalkDir(DefaultFS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".yaml") {
			files["default/"+p], _ = fs.ReadFile(DefaultFS(), p)
		}
		return nil
	})
	fp, err := os.ReadFile(filepath.Join("testdata", "fingerprint", "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files["testdata/fingerprint/catalog.yaml"] = fp
	files["base a"], files["base b"] = []byte(baseA), []byte(baseB)
	if len(files) < 7 {
		t.Fatalf("found only %d catalog files", len(files))
	}
	for name, data := range files {
		for _, doc := range yamlDocsAsJSON(t, name, data) {
			if err := schema.Validate(doc); err != nil {
				t.Errorf("%s does not match the schema: %v", name, err)
			}
		}
	}
	bad := mustReplace(t, baseB, "    label: Hello\n", "    label: Hello\n    colour: blue\n")
	for _, doc := range yamlDocsAsJSON(t, "bad", []byte(bad)) {
		if schema.Validate(doc) == nil {
			t.Error("the schema accepts an unknown case key")
		}
	}
}

// TestSchemaMatchesTypes keeps the schema and the Go types in step: every $defs entry
// has exactly the YAML keys of its Go type, and enumerations match the Go tables.
func TestSchemaMatchesTypes(t *testing.T) {
	t.Parallel()
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Defs       map[string]struct {
			Properties map[string]struct {
				Enum  []string `json:"enum"`
				Items struct {
					Enum []string `json:"enum"`
				} `json:"items"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(SchemaJSON, &s); err != nil {
		t.Fatal(err)
	}
	types := map[string]reflect.Type{
		"group": reflect.TypeFor[Group](), "credential": reflect.TypeFor[Credential](),
		"qualification": reflect.TypeFor[Qualification](), "profileRanking": reflect.TypeFor[ProfileRanking](),
		"expectedRuntimeMetadata": reflect.TypeFor[ExpectedRuntimeMeta](), "profile": reflect.TypeFor[Profile](),
		"lifecycle": reflect.TypeFor[Lifecycle](), "resources": reflect.TypeFor[Resources](),
		"executionTarget": reflect.TypeFor[ExecutionTarget](), "environment": reflect.TypeFor[Environment](),
		"terminalState": reflect.TypeFor[TerminalState](), "questionAnswer": reflect.TypeFor[QuestionAnswer](),
		"planMarkers": reflect.TypeFor[PlanMarkers](), "workspaceEdit": reflect.TypeFor[WorkspaceEdit](), "workspaceWait": reflect.TypeFor[WorkspaceWait](), "workspaceRun": reflect.TypeFor[WorkspaceRun](),
		"referenceStep": reflect.TypeFor[ReferenceStep](), "referenceTurn": reflect.TypeFor[ReferenceTurn](),
		"referenceScript": reflect.TypeFor[ReferenceScript](), "case": reflect.TypeFor[Case](),
		"suite": reflect.TypeFor[Suite](), "ranking": reflect.TypeFor[Ranking](), "rankingModel": reflect.TypeFor[RankingModel](),
		"knownFailure": reflect.TypeFor[KnownFailure](), "workspace": reflect.TypeFor[Workspace](),
		"verify": reflect.TypeFor[Verify](), "verifyStep": reflect.TypeFor[VerifyStep](), "verifyReport": reflect.TypeFor[VerifyReport](),
		"matcher": reflect.TypeOf(Case{}.Matchers).Elem(),
	}
	defNames := make([]string, 0, len(s.Defs))
	for name := range s.Defs {
		defNames = append(defNames, name)
	}
	slices.Sort(defNames)
	if diff := cmp.Diff(slices.Sorted(maps.Keys(types)), defNames); diff != "" {
		t.Errorf("schema $defs vs Go types (-go +schema):\n%s", diff)
	}
	for name, typ := range types {
		var props []string
		for p := range s.Defs[name].Properties {
			props = append(props, p)
		}
		slices.Sort(props)
		want := slices.Clone(fieldsOf(typ).names)
		slices.Sort(want)
		if diff := cmp.Diff(want, props); diff != "" {
			t.Errorf("$defs.%s properties (-go +schema):\n%s", name, diff)
		}
	}
	top := slices.Sorted(func(yield func(string) bool) {
		for k := range s.Properties {
			if !yield(k) {
				return
			}
		}
	})
	want := slices.Clone(fieldsOf(reflect.TypeFor[document]()).names)
	slices.Sort(want)
	if diff := cmp.Diff(want, top); diff != "" {
		t.Errorf("top-level properties (-go +schema):\n%s", diff)
	}
	enums := []struct {
		def, prop string
		want      []string
	}{
		{"profile", "generation", Generations}, {"profile", "driver", driver.Names()},
		{"qualification", "source", QualificationSources}, {"credential", "scope", CredentialScopes},
		{"environment", "driver", EnvironmentDrivers}, {"environment", "provider", EnvironmentProviders},
		{"lifecycle", "setup", LifecycleSetups}, {"lifecycle", "probe", LifecycleProbes}, {"lifecycle", "cleanup", LifecycleCleanups},
		{"executionTarget", "kind", TargetKinds}, {"executionTarget", "transport", TargetTransports},
		{"case", "workMode", WorkModes}, {"terminalState", "issue", IssueStates},
		{"terminalState", "run", RunStates}, {"case", "toolReviewDecision", ToolReviews},
		{"case", "automaticRetryPolicy", RetryPolicies}, {"referenceTurn", "trigger", TurnTriggers},
	}
	var kinds []string
	for _, k := range match.Kinds() {
		kinds = append(kinds, string(k))
	}
	schemaKinds := slices.Clone(s.Defs["matcher"].Properties["kind"].Enum)
	slices.Sort(kinds)
	slices.Sort(schemaKinds)
	if diff := cmp.Diff(kinds, schemaKinds); diff != "" {
		t.Errorf("$defs.matcher.kind enum (-match.Kinds +schema):\n%s", diff)
	}
	for _, e := range enums {
		if diff := cmp.Diff(e.want, s.Defs[e.def].Properties[e.prop].Enum); diff != "" {
			t.Errorf("$defs.%s.%s enum (-go +schema):\n%s", e.def, e.prop, diff)
		}
	}
}

// TestDefaultFilesDeclareSchema: every default catalog file starts with the
// yaml-language-server modeline naming catalog/schema/catalog.schema.json by a path
// relative to the file, so an editor validates it against the schema; the modeline is
// a comment, so the default suites' fingerprints (testdata/default-fingerprints.golden,
// TestDefaultFingerprintsGolden) do not depend on it.
func TestDefaultFilesDeclareSchema(t *testing.T) {
	t.Parallel()
	names, err := fs.Glob(DefaultFS(), "*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatalf("default files: %v %v", names, err)
	}
	for _, name := range names {
		data, err := fs.ReadFile(DefaultFS(), name)
		if err != nil {
			t.Fatal(err)
		}
		if first, _, _ := strings.Cut(string(data), "\n"); first != DefaultSchemaModeline {
			t.Errorf("default/%s starts with %q, want %q", name, first, DefaultSchemaModeline)
		}
	}
	target := strings.TrimPrefix(DefaultSchemaModeline, "# yaml-language-server: $schema=")
	onDisk, err := os.ReadFile(filepath.Join("default", filepath.FromSlash(target)))
	if err != nil {
		t.Fatalf("the modeline's schema path does not resolve from catalog/default: %v", err)
	}
	if !bytes.Equal(onDisk, SchemaJSON) {
		t.Fatal("the modeline names a file other than the embedded schema")
	}
}

// TestSchemaGrantableClaims: the schema's capabilityGrants enum is GrantableClaims.
func TestSchemaGrantableClaims(t *testing.T) {
	t.Parallel()
	var doc struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Items struct {
					Enum []string `json:"enum"`
				} `json:"items"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(SchemaJSON, &doc); err != nil {
		t.Fatal(err)
	}
	for _, def := range []string{"profile", "case"} {
		got := doc.Defs[def].Properties["capabilityGrants"].Items.Enum
		if !slices.Equal(got, GrantableClaims()) {
			t.Errorf("%s capabilityGrants enum %v, want GrantableClaims %v", def, got, GrantableClaims())
		}
	}
}
