// Package template is the catalog's template language: literal text with placeholders
// "{{name}}" (spaces inside the braces allowed), where name is a variable such as nonce,
// marker or, in an exec agent's arguments, workspace. There is no escaping and no
// logic: a "{{" must open a placeholder. It is a leaf: the catalog renders a case's
// templates with it, and the exec driver its arguments, without either importing the
// other.
package template

import (
	"fmt"
	"strings"
)

// Template is a parsed template: its literal parts and placeholders (see Vars).
type Template struct {
	parts []tmplPart
}

type tmplPart struct {
	lit string
	v   string // variable name; "" for a literal part
}

// Error reports a template that does not parse or names a variable that is not
// defined where it is used. Offset is the byte offset of the problem in the template.
type Error struct {
	Offset  int
	Message string
}

// Error renders "template: at byte N: message".
func (e *Error) Error() string {
	return fmt.Sprintf("template: at byte %d: %s", e.Offset, e.Message)
}

// Parse parses s. It returns an *Error for an unclosed "{{" or a
// placeholder whose name is not an identifier ([A-Za-z][A-Za-z0-9]*).
func Parse(s string) (Template, error) {
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
			return Template{}, &Error{Offset: off + i, Message: `"{{" is not closed by "}}"`}
		}
		name := strings.TrimSpace(rest[i+2 : i+2+j])
		if !isIdent(name) {
			return Template{}, &Error{Offset: off + i, Message: fmt.Sprintf("placeholder %q is not a variable name", rest[i:i+4+j])}
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

// Render substitutes vars. It returns an *Error naming the first variable that
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
			return "", &Error{Message: fmt.Sprintf("variable %q is not defined here", p.v)}
		}
		b.WriteString(val)
	}
	return b.String(), nil
}
