package catalog

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/agentproof/agentproof/canonjson"
)

// descriptive are the YAML keys of a declaration that only describe it (names for
// humans, selection groups) and so stay out of what grades.
var descriptive = []string{"label", "description", "groups"}

// suiteDescriptive are the suite keys that describe or select, never grade: besides the
// descriptive ones, the expected size (checked at load) and manualOnly (selection);
// the original harness's inputs are fingerprinted apart (FingerprintJSON).
var suiteDescriptive = []string{"label", "description", "groups", "expectedMatrixSize", "manualOnly",
	"id", "profiles", "environments", "cases", "excludedExecutionIds", "definitionMetadata"}

// gradingJSON is the "grading" member of a suite's fingerprint: every field of its
// declarations that decides a verdict — each case (prompt, title, marker, matchers,
// flow, run counts, timeouts, terminal state, the reference script, capability grants,
// every other key but its label and groups), each profile (driver and driverConfig,
// generation, provider, model and qualification, expected runtime metadata, lifecycle
// mode, capability grants, every other key but its label and groups), each
// environment (driver, provider, lifecycle, deadline, resources, execution target,
// config) and the suite's expected verdicts — in suite order, each as its YAML keys
// with the values it was declared with (absent and zero values left out, maps by sorted
// key). docs/regressions.md "What the definition covers" lists them.
func (s *Suite) gradingJSON() canonjson.Object {
	var cases, profiles, envs []any
	for _, c := range s.cases {
		cases = append(cases, declared(reflect.ValueOf(c), descriptive))
	}
	for _, p := range s.profiles {
		profiles = append(profiles, declared(reflect.ValueOf(p), descriptive))
	}
	for _, e := range s.envs {
		envs = append(envs, declared(reflect.ValueOf(e), descriptive))
	}
	return canonjson.Object{
		{Key: "cases", Value: orEmpty(cases)},
		{Key: "profiles", Value: orEmpty(profiles)},
		{Key: "environments", Value: orEmpty(envs)},
		{Key: "suite", Value: declared(reflect.ValueOf(s), suiteDescriptive)},
	}
}

func orEmpty(v []any) []any {
	if v == nil {
		return []any{}
	}
	return v
}

// declared is v as declared: a struct as an Object of its YAML keys (fields tagged "-"
// and the keys in skip left out, zero values left out), Metadata as its value, a map as
// an Object of its entries by sorted key, a Workspace with its source's digest, a slice as a list, a pointer or interface as
// what it points to, a number as a float64 (JSON's), anything else as itself.
func declared(v reflect.Value, skip []string) any {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Type() == metadataType {
		return v.Interface().(Metadata).Value
	}
	if v.Type() == workspaceType {
		// The source's content, not only its name: a changed file changes the definition.
		w := v.Interface().(Workspace)
		return append(declaredStruct(v, skip), canonjson.Member{Key: "digest", Value: w.Source.Digest})
	}
	switch v.Kind() {
	case reflect.Struct:
		return declaredStruct(v, skip)
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		out := canonjson.Object{}
		for _, k := range keys {
			out = append(out, canonjson.Member{Key: k.String(), Value: declared(v.MapIndex(k), nil)})
		}
		return out
	case reflect.Slice, reflect.Array:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = declared(v.Index(i), nil)
		}
		return out
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(v.Uint())
	case reflect.Float32, reflect.Float64:
		return v.Float()
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return v.Bool()
	}
	return nil
}

// declaredStruct is a struct's Object (see declared).
func declaredStruct(v reflect.Value, skip []string) canonjson.Object {
	out := canonjson.Object{}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" || name == "" || slices.Contains(skip, name) || v.Field(i).IsZero() {
			continue
		}
		out = append(out, canonjson.Member{Key: name, Value: declared(v.Field(i), nil)})
	}
	return out
}

// DefinitionChange names the first place where two suite definitions (the bytes of
// FingerprintJSON, for example one recorded in a campaign's plan.json and the
// catalog's now) differ: a path into the definition — objects by key, lists of
// declarations by their id ("grading.cases[permission-deny-write].matchers[2].expected")
// — and both values, clipped ("was …, now …"; "absent" for a missing value). It is ""
// when the two are the same JSON value, and says so when either is not JSON.
func DefinitionChange(was, now []byte) string {
	var a, b any
	if err := json.Unmarshal(was, &a); err != nil {
		return "the recorded definition is not JSON"
	}
	if err := json.Unmarshal(now, &b); err != nil {
		return "the definition is not JSON"
	}
	path, x, y, ok := firstDifference("", a, b)
	if !ok {
		return ""
	}
	if path == "" {
		path = "the definition"
	}
	return fmt.Sprintf("%s (was %s, now %s)", path, shortJSON(x), shortJSON(y))
}

// absent stands for a value one side lacks.
type absent struct{}

// firstDifference walks a and b in a's order (then b's extra keys) and returns the
// path of the first place they differ with both values there.
func firstDifference(path string, a, b any) (string, any, any, bool) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return path, a, b, true
		}
		return firstKeyDifference(path, x, y)
	case []any:
		y, ok := b.([]any)
		if !ok {
			return path, a, b, true
		}
		for i := range max(len(x), len(y)) {
			var ea, eb any = absent{}, absent{}
			if i < len(x) {
				ea = x[i]
			}
			if i < len(y) {
				eb = y[i]
			}
			if p, va, vb, ok := firstDifference(path+"["+elementName(i, ea, eb)+"]", ea, eb); ok {
				return p, va, vb, true
			}
		}
		return "", nil, nil, false
	}
	if reflect.DeepEqual(a, b) {
		return "", nil, nil, false
	}
	return path, a, b, true
}

// firstKeyDifference is firstDifference of two objects: keys in sorted order.
func firstKeyDifference(path string, x, y map[string]any) (string, any, any, bool) {
	keys := make([]string, 0, len(x)+len(y))
	for k := range x {
		keys = append(keys, k)
	}
	for k := range y {
		if _, ok := x[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		va, ok := x[k]
		if !ok {
			va = absent{}
		}
		vb, ok := y[k]
		if !ok {
			vb = absent{}
		}
		p := k
		if path != "" {
			p = path + "." + k
		}
		if dp, da, db, diff := firstDifference(p, va, vb); diff {
			return dp, da, db, true
		}
	}
	return "", nil, nil, false
}

// elementName names element i of a list: the id of a declaration ("permission-deny-
// write", from either side), else its index.
func elementName(i int, a, b any) string {
	for _, v := range []any{a, b} {
		if m, ok := v.(map[string]any); ok {
			if id, ok := m["id"].(string); ok && id != "" {
				return id
			}
		}
	}
	return strconv.Itoa(i)
}

// shortJSON renders a value for a message: "absent", or its JSON clipped to 120 bytes.
func shortJSON(v any) string {
	if _, ok := v.(absent); ok {
		return "absent"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	if len(b) > 120 {
		return strings.ToValidUTF8(string(b[:120]), "") + "…"
	}
	return string(b)
}
