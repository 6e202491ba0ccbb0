package catalog

import (
	"fmt"
	"strings"

	"github.com/agentproof/agentproof/template"
)

// Template is a parsed catalog template (package template: literal text with
// "{{name}}" placeholders).
type Template = template.Template

// TemplateError reports a template that does not parse or names a variable that is not
// defined where it is used (template.Error).
type TemplateError = template.Error

// ParseTemplate parses s (template.Parse).
func ParseTemplate(s string) (Template, error) { return template.Parse(s) }

// renderString parses and renders s in one step.
func renderString(s string, vars map[string]string) (string, error) {
	if !strings.Contains(s, "{{") {
		return s, nil
	}
	t, err := ParseTemplate(s)
	if err != nil {
		return "", err
	}
	return t.Render(vars)
}

// renderValue renders every string inside a JSON-like value (maps, slices, strings),
// returning a deep copy; other values are returned as they are.
func renderValue(v any, vars map[string]string) (any, error) {
	switch x := v.(type) {
	case string:
		return renderString(x, vars)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := renderValue(e, vars)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := renderValue(e, vars)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}
