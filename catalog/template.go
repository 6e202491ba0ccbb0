package catalog

import (
	"fmt"
	"strings"
)

// Template is a parsed catalog template: literal text with placeholders "{{name}}"
// (spaces inside the braces allowed), where name is a variable such as nonce or marker
// (see Vars). There is no escaping and no logic: a "{{" must open a placeholder.
type Template struct {
	parts []tmplPart
}

type tmplPart struct {
	lit string
	v   string // variable name; "" for a literal part
}

// TemplateError reports a template that does not parse or names a variable that is not
// defined where it is used. Offset is the byte offset of the problem in the template.
type TemplateError struct {
	Offset  int
	Message string
}

// Error renders "template: at byte N: message".
func (e *TemplateError) Error() string {
	return fmt.Sprintf("template: at byte %d: %s", e.Offset, e.Message)
}

// ParseTemplate parses s. It returns a *TemplateError for an unclosed "{{" or a
// placeholder whose name is not an identifier ([A-Za-z][A-Za-z0-9]*).
func ParseTemplate(s string) (Template, error) {
	var t Template
	rest, off := s, 0
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			if rest != "" {
				t.parts = append(t.parts, tmplPart{lit: rest})
			}
			return t, nil
		}
		if i > 0 {
			t.parts = append(t.parts, tmplPart{lit: rest[:i]})
		}
		j := strings.Index(rest[i+2:], "}}")
		if j < 0 {
			return Template{}, &TemplateError{Offset: off + i, Message: `"{{" is not closed by "}}"`}
		}
		name := strings.TrimSpace(rest[i+2 : i+2+j])
		if !isIdent(name) {
			return Template{}, &TemplateError{Offset: off + i, Message: fmt.Sprintf("placeholder %q is not a variable name", rest[i:i+4+j])}
		}
		t.parts = append(t.parts, tmplPart{v: name})
		off += i + 4 + j
		rest = rest[i+4+j:]
	}
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Vars returns the variable names the template uses, in order of appearance (with
// repeats).
func (t Template) Vars() []string {
	var out []string
	for _, p := range t.parts {
		if p.v != "" {
			out = append(out, p.v)
		}
	}
	return out
}

// Render substitutes vars. It returns a *TemplateError naming the first variable that
// vars does not define.
func (t Template) Render(vars map[string]string) (string, error) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.v == "" {
			b.WriteString(p.lit)
			continue
		}
		val, ok := vars[p.v]
		if !ok {
			return "", &TemplateError{Message: fmt.Sprintf("variable %q is not defined here", p.v)}
		}
		b.WriteString(val)
	}
	return b.String(), nil
}

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
