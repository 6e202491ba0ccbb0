package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// MaxArgumentBytes bounds the JSON of one tool call's arguments (bytes); the agent API
// refuses request bodies over 1 MiB anyway.
const MaxArgumentBytes = 512 << 10

// ArgumentError is a tool call whose arguments do not fit the tool's input schema. It
// reaches the model as a tool error "invalid_arguments: <problems>".
type ArgumentError struct {
	Tool     string
	Problems []string
}

// Error renders "invalid_arguments: <tool>: <problem; problem>".
func (e *ArgumentError) Error() string {
	return "invalid_arguments: " + e.Tool + ": " + strings.Join(e.Problems, "; ")
}

// validators compiles, once, each tool's input schema with additionalProperties false
// added at the top: the published schema omits it (some clients mishandle it) but an unknown argument is still refused by name.
var validators = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	out := map[string]*jsonschema.Schema{}
	for _, t := range Tools() {
		s := maps.Clone(t.InputSchema)
		s["additionalProperties"] = false
		raw, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		url := "https://agentproof.invalid/mcp/" + t.Name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			return nil, err
		}
		if out[t.Name], err = c.Compile(url); err != nil {
			return nil, fmt.Errorf("mcp: tool %s schema: %w", t.Name, err)
		}
	}
	return out, nil
})

// DecodeArguments decodes and validates one call's arguments (untrusted: they come from
// the model through the MCP client) against tool's input schema. Absent, empty or null
// arguments are {}. Numbers keep their JSON text (json.Number). Errors: *ArgumentError
// for an unknown tool, more than MaxArgumentBytes, JSON that is not one object, or every
// schema violation (reported together, by argument path).
func DecodeArguments(tool string, raw []byte) (map[string]any, error) {
	vs, err := validators()
	if err != nil {
		panic(fmt.Sprintf("mcp: tool schemas do not compile: %v", err))
	}
	v := vs[tool]
	if v == nil {
		return nil, &ArgumentError{Tool: tool, Problems: []string{"unknown tool"}}
	}
	if len(raw) > MaxArgumentBytes {
		return nil, &ArgumentError{Tool: tool, Problems: []string{fmt.Sprintf("arguments are %d bytes; the limit is %d", len(raw), MaxArgumentBytes)}}
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var args map[string]any
	if err := dec.Decode(&args); err != nil {
		return nil, &ArgumentError{Tool: tool, Problems: []string{"arguments must be one JSON object: " + err.Error()}}
	}
	if dec.More() {
		return nil, &ArgumentError{Tool: tool, Problems: []string{"arguments must be one JSON object: trailing data"}}
	}
	if args == nil {
		return nil, &ArgumentError{Tool: tool, Problems: []string{"arguments must be a JSON object"}}
	}
	// The validator wants its own number type; validate a re-decoded copy.
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, &ArgumentError{Tool: tool, Problems: []string{"arguments are not valid JSON: " + err.Error()}}
	}
	if err := v.Validate(inst); err != nil {
		return nil, &ArgumentError{Tool: tool, Problems: problems(err)}
	}
	return args, nil
}

// problems flattens a validation error into one line per leaf cause, sorted.
func problems(err error) []string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{err.Error()}
	}
	p := message.NewPrinter(language.English)
	var out []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			out = append(out, fmt.Sprintf("at %s: %s", loc, e.ErrorKind.LocalizedString(p)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.Sort(out)
	return slices.Compact(out)
}
