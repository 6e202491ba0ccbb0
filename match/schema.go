package match

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaFormats are the values of the JSON Schema "format" keyword a json_schema matcher
// asserts (docs/matchers.md "JSON Schema formats"): under draft 2020-12 "format" is only
// an annotation unless asserted, and agentproof asserts it, so a value that does not
// match its format fails the matcher. They are the formats
// github.com/santhosh-tekuri/jsonschema/v6 validates; any other format is a catalog
// error, because an unasserted format would silently pass everything.
var SchemaFormats = []string{
	"date", "date-time", "duration", "email", "hostname", "ipv4", "ipv6", "iri",
	"iri-reference", "json-pointer", "period", "regex", "relative-json-pointer", "semver",
	"time", "uri", "uri-reference", "uri-template", "uuid",
}

// Keywords whose value is one subschema, a map of subschemas, or a list of subschemas
// (drafts 2020-12, 2019-09 and 7, which a schema may choose with "$schema").
var (
	subschemaOne = []string{"additionalItems", "additionalProperties", "contains", "contentSchema", "else", "if",
		"items", "not", "propertyNames", "then", "unevaluatedItems", "unevaluatedProperties"}
	subschemaMap  = []string{"$defs", "definitions", "dependencies", "dependentSchemas", "patternProperties", "properties"}
	subschemaList = []string{"allOf", "anyOf", "items", "oneOf", "prefixItems"}
)

// schemaRef is one reference written in a schema: its JSON Pointer (RFC 6901) in the
// schema, the keyword ("$ref", "$dynamicRef" or "$schema"), the value as written and the
// URL it resolves to (without fragment) against the base in force there.
type schemaRef struct {
	pointer, keyword, written, resolved string
}

// schemaFormat is one "format" keyword: its JSON Pointer and value.
type schemaFormat struct {
	pointer, value string
}

// walkSchema visits every schema object of doc (a decoded JSON Schema) and returns the
// references and formats it holds, in pointer order. base is the document's URL; an
// "$id" changes the base of its subtree.
func walkSchema(doc any, base string) ([]schemaRef, []schemaFormat) {
	var refs []schemaRef
	var formats []schemaFormat
	var walk func(v any, ptr string, base *url.URL)
	walk = func(v any, ptr string, base *url.URL) {
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		if id, ok := obj["$id"].(string); ok && base != nil {
			if u, err := base.Parse(id); err == nil {
				u.Fragment = ""
				base = u
			}
		}
		for _, kw := range []string{"$ref", "$dynamicRef", "$schema"} {
			s, ok := obj[kw].(string)
			if !ok {
				continue
			}
			r := schemaRef{pointer: ptr + "/" + escapePointer(kw), keyword: kw, written: s, resolved: s}
			if base != nil {
				if u, err := base.Parse(s); err == nil {
					u.Fragment = ""
					r.resolved = u.String()
				}
			}
			refs = append(refs, r)
		}
		if f, ok := obj["format"].(string); ok {
			formats = append(formats, schemaFormat{pointer: ptr + "/format", value: f})
		}
		for _, kw := range subschemaOne {
			if sub, ok := obj[kw].(map[string]any); ok {
				walk(sub, ptr+"/"+escapePointer(kw), base)
			}
		}
		for _, kw := range subschemaMap {
			m, ok := obj[kw].(map[string]any)
			if !ok {
				continue
			}
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(m[k], ptr+"/"+escapePointer(kw)+"/"+escapePointer(k), base)
			}
		}
		for _, kw := range subschemaList {
			if list, ok := obj[kw].([]any); ok {
				for i, sub := range list {
					walk(sub, ptr+"/"+escapePointer(kw)+"/"+strconv.Itoa(i), base)
				}
			}
		}
	}
	u, _ := url.Parse(base)
	walk(doc, "", u)
	return refs, formats
}

// escapePointer escapes one JSON Pointer reference token (RFC 6901: "~" → "~0", "/" →
// "~1").
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// recordingLoader refuses to load any schema resource, as a matcher's schema must be
// self-contained (no file or network access at validation or evaluation), and records
// each URL it was asked for so that the refusal can name the reference as written.
type recordingLoader struct{ asked []string }

// Load always fails.
func (l *recordingLoader) Load(u string) (any, error) {
	l.asked = append(l.asked, u)
	return nil, fmt.Errorf("schema references %s; a matcher's schema must be self-contained (no remote or file $ref)", u)
}

// refusedRef names the reference behind a refused load of u, as written in the schema:
// `$ref "./shared/defs.json" at /properties/a/$ref`; u itself when no reference of the
// schema resolves to it.
func refusedRef(refs []schemaRef, u string) (string, string) {
	for _, r := range refs {
		if r.resolved == u || r.written == u {
			return fmt.Sprintf("%s %q at %s", r.keyword, r.written, r.pointer), r.pointer
		}
	}
	return fmt.Sprintf("%q", u), ""
}

func compileSchema(spec Spec, c *compiled, bad badFunc) {
	if spec.Schema == nil {
		bad("schema", "schema is required: a JSON Schema (draft 2020-12) document the observation's JSON must satisfy")
		return
	}
	raw, err := json.Marshal(spec.Schema)
	if err != nil {
		e := bad("schema", "schema cannot be encoded as JSON; use only maps with string keys, lists, strings, numbers and booleans")
		e.Err = err
		return
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		e := bad("schema", "schema is not a JSON document: %v", err)
		e.Err = err
		return
	}
	switch doc.(type) {
	case map[string]any, bool:
	default:
		bad("schema", "schema must be a map (or a boolean), not %s", jsonType(doc))
		return
	}
	refs, formats := walkSchema(doc, schemaURL)
	known := false
	for _, f := range formats {
		known = false
		for _, k := range SchemaFormats {
			known = known || f.value == k
		}
		if !known {
			e := bad("schema", "format %q at %s is not a format agentproof asserts (an unasserted format would accept any value); use one of %s, or remove it", f.value, f.pointer, strings.Join(SchemaFormats, ", "))
			e.Pointer = f.pointer
		}
	}
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	comp.AssertFormat()
	loader := &recordingLoader{}
	comp.UseLoader(loader)
	if err := comp.AddResource(schemaURL, doc); err != nil {
		e := bad("schema", "schema cannot be registered: %v", err)
		e.Err = err
		return
	}
	sch, err := comp.Compile(schemaURL)
	if err != nil {
		if len(loader.asked) > 0 {
			what, ptr := refusedRef(refs, loader.asked[0])
			e := bad("schema", "schema refers to %s, outside the schema; a matcher's schema must be self-contained (no remote or file $ref: put shared definitions under $defs and refer to them as \"#/$defs/<name>\")", what)
			e.Pointer, e.Err = ptr, err
			return
		}
		e := bad("schema", "schema is not a valid JSON Schema (draft 2020-12): %s", strings.ReplaceAll(err.Error(), schemaURL, "schema"))
		e.Err = err
		return
	}
	c.schema = sch
	c.display = spec.Schema
}
