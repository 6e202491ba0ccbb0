package match

import (
	"fmt"
	"strings"
)

// SpecError is one problem with a matcher Spec, found by Compile or CompileAll before any
// evaluation. Kind is the spec's kind as written (possibly empty or unknown), Field the
// offending field by its YAML/JSON name ("kind", "expected", "count", "pattern", "flags",
// "path", "name", "mimeType", "schema", "turn", "normalize"), Message says what is wrong and what to do.
// For a regular expression that uses a construct RE2 lacks, Construct names it
// ("lookahead", "lookbehind" or "backreference"). Index is the spec's position in the
// slice given to CompileAll (0 from Compile). Pointer, when set, is the JSON Pointer
// (RFC 6901) of the offending keyword inside the field's value (for a schema: the
// "format" or "$ref" at fault, such as "/properties/when/format"), so that a catalog can
// point at its line. Err, when set, is the underlying library error (regexp, JSONPath or
// JSON Schema) and is returned by Unwrap.
type SpecError struct {
	Index     int
	Kind      Kind
	Field     string
	Message   string
	Construct string
	Pointer   string
	Err       error
}

// Error renders the problem as `matcher <kind>: <field>: <message>`.
func (e *SpecError) Error() string {
	kind := string(e.Kind)
	if kind == "" {
		kind = "(no kind)"
	}
	return fmt.Sprintf("matcher %s: %s: %s", kind, e.Field, e.Message)
}

// Unwrap returns the underlying library error, if any.
func (e *SpecError) Unwrap() error { return e.Err }

// SpecErrors is every problem CompileAll found, in spec order and, within one spec, in
// field-check order. It is never returned empty.
type SpecErrors []*SpecError

// Error renders one problem per line, each prefixed with the matcher's index.
func (es SpecErrors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "matchers[%d]: %s", e.Index, e.Error())
	}
	return b.String()
}

// Unwrap exposes each *SpecError to errors.Is and errors.As.
func (es SpecErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}
