package catalog

import (
	"errors"
	"strings"
	"testing"
)

// TestSyntaxErrorLines: a YAML syntax error is reported at the line that holds the
// offending text (go.yaml.in/yaml/v3 alone names the enclosing block's line, one early
// for parser errors), with yaml's message, for every common way to break a file.
func TestSyntaxErrorLines(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, yaml string
		line       int
		message    string
	}{
		{"tab indentation", "groups:\n  - id: a\n    description: x\n\t- id: b\n", 4, "found a tab character that violates indentation"},
		{"tab inside a mapping", "groups:\n  - id: a\n\tdescription: x\n", 3, "found a tab character that violates indentation"},
		{"unclosed double quote", "groups:\n  - id: a\n    description: \"unclosed\n  - id: b\n    description: y\n", 3, "found unexpected end of stream"},
		{"unclosed single quote", "groups:\n  - id: a\n  - id: 'b\n", 3, "found unexpected end of stream"},
		{"key indented one space short", "groups:\n  - id: a\n    description: x\n  - id: b\n   description: y\n", 5, "did not find expected '-' indicator"},
		{"key indented too deep", "groups:\n  - id: a\n      description: x\n", 3, "mapping values are not allowed in this context"},
		{"mapping value inside a plain scalar", "groups:\n  - id: a\n    description: x: y\n", 3, "mapping values are not allowed in this context"},
		{"sequence item under a mapping", "profiles:\n  - id: a\n    label: A\n    - b\n", 4, "did not find expected key"},
		{"unclosed flow sequence (the line that opens it)", "suites:\n  - id: s\n    profiles: [a, b\n    cases: [c]\n", 3, "did not find expected ',' or ']'"},
		{"after a valid multi-line flow sequence", "suites:\n  - id: s\n    profiles: [a,\n      b]\n    cases: [c]\n   label: x\n", 6, "did not find expected '-' indicator"},
		{"in the second document", "groups:\n  - id: a\n---\ngroups:\n  - id: b\n  description: x\n", 6, "did not find expected '-' indicator"},
		{"after a block scalar", "cases:\n  - id: c\n    prompt: |\n      line one\n      line two\n    title: t\n  bad\n", 7, "could not find expected ':'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := parseFile("c.yaml", []byte(c.yaml))
			if len(r.ps.list) != 1 {
				t.Fatalf("problems %v, want one", r.ps.list)
			}
			p := r.ps.list[0]
			want := "malformed YAML: " + c.message
			if p.File != "c.yaml" || p.Line != c.line || p.Message != want {
				t.Errorf("got %q, want c.yaml:%d: %s", p.String(), c.line, want)
			}
		})
	}
}

// TestSyntaxErrorLineWithoutMatchingPrefix: when no prefix of whole lines fails with
// the file's error, no line is invented.
func TestSyntaxErrorLineWithoutMatchingPrefix(t *testing.T) {
	t.Parallel()
	if got := syntaxErrorLine([]byte("a: 1\nb: 2\n"), errors.New("yaml: line 1: something else")); got != 0 {
		t.Fatalf("line %d, want 0", got)
	}
	if got := lineEnds([]byte("a\nbc")); len(got) != 2 || got[0] != 2 || got[1] != 4 {
		t.Fatalf("lineEnds = %v", got)
	}
	if got := lineEnds(nil); len(got) != 0 {
		t.Fatalf("lineEnds(nil) = %v", got)
	}
}

// TestSyntaxErrorThroughLoad: the line reaches the problem Load reports, as
// file:line: (the column is unknown for a syntax error).
func TestSyntaxErrorThroughLoad(t *testing.T) {
	t.Parallel()
	_, err := loadFiles(map[string]string{"a.yaml": baseA, "b.yaml": "groups:\n  - id: x\n\t- id: y\n"})
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 1 {
		t.Fatalf("err = %v", err)
	}
	if got := ve.Problems[0].String(); !strings.HasPrefix(got, "b.yaml:3: malformed YAML: found a tab character") {
		t.Fatalf("problem %q, want it at b.yaml:3", got)
	}
}
