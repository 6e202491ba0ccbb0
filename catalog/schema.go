package catalog

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// SchemaJSON is the JSON Schema (draft 2020-12) of one catalog YAML document,
// catalog/schema/catalog.schema.json, for editors and external tools (`agentproof
// schema` prints it). Load checks everything the schema says and more (references,
// sizes, secrets, matchers, templates); the schema does not replace `agentproof
// validate`.
//
//go:embed schema/catalog.schema.json
var SchemaJSON []byte

// DefaultSchemaModeline is the first line of every default catalog file: the
// yaml-language-server modeline that makes an editor (VS Code's YAML extension, any
// client of yaml-language-server) validate the file against SchemaJSON, named by its
// path relative to catalog/default/. A user's catalog names its own copy the same way
// (`agentproof schema > catalog.schema.json`, then "# yaml-language-server:
// $schema=catalog.schema.json"). It is a YAML comment: it changes no declaration and no
// fingerprint.
const DefaultSchemaModeline = "# yaml-language-server: $schema=../schema/catalog.schema.json"

// Schema returns SchemaJSON with the enumeration of a case's flow made of flows (the
// flow registry's names, sorted here), everything else byte for byte: what `agentproof
// schema` prints. SchemaJSON itself lists the registered flows (a test of the flow
// registry keeps it so), so that an editor reading the file from the repository knows
// them too.
func Schema(flows []Flow) ([]byte, error) {
	start, end, err := flowEnumSpan(SchemaJSON)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(flows))
	for i, f := range flows {
		names[i] = string(f)
	}
	slices.Sort(names)
	indent := start - (bytes.LastIndexByte(SchemaJSON[:start], '\n') + 1)
	enum, err := json.MarshalIndent(names, strings.Repeat(" ", indent-len(`"enum": `)), "  ")
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(SchemaJSON)+len(enum))
	out = append(append(append(out, SchemaJSON[:start]...), enum...), SchemaJSON[end:]...)
	return out, nil
}

// flowEnumPath is where a case's flow enumeration is in SchemaJSON.
var flowEnumPath = []string{"$defs", "case", "properties", "flow", "enum"}

// flowEnumSpan returns the byte offsets of the JSON array at flowEnumPath in doc:
// start at its '[', end after its ']'.
func flowEnumSpan(doc []byte) (start, end int, err error) {
	type frame struct {
		object, wantKey bool
		key             string // an object's current member
	}
	var stack []frame
	path := func() []string {
		var out []string
		for _, f := range stack {
			if !f.object {
				f.key = "[]"
			}
			out = append(out, f.key)
		}
		return out
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	for {
		tok, err := dec.Token()
		if err != nil {
			return 0, 0, fmt.Errorf("the schema has no %s array: %w", strings.Join(flowEnumPath, "."), err)
		}
		top := len(stack) - 1
		d, delim := tok.(json.Delim)
		switch {
		case delim && (d == '}' || d == ']'):
			stack = stack[:top]
			if top > 0 && stack[top-1].object {
				stack[top-1].wantKey = true
			}
		case top >= 0 && stack[top].object && stack[top].wantKey:
			stack[top].key, _ = tok.(string)
			stack[top].wantKey = false
		case delim && d == '[' && slices.Equal(path(), flowEnumPath):
			start = bytes.LastIndexByte(doc[:dec.InputOffset()], '[')
			var raw json.RawMessage
			rest := json.NewDecoder(bytes.NewReader(doc[start:]))
			if err := rest.Decode(&raw); err != nil {
				return 0, 0, err
			}
			return start, start + int(rest.InputOffset()), nil
		case delim:
			stack = append(stack, frame{object: d == '{', wantKey: d == '{'})
		case top >= 0 && stack[top].object:
			stack[top].wantKey = true
		}
	}
}
