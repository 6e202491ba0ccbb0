package agentproof_test

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// citation matches a reference a newcomer to this repository cannot open: a numbered
// issue, a seed document, a section of a specification kept outside the repository, a
// field-failure number, or a design note that is not here. A rule is stated in words
// or linked to a page under docs/ instead.
var citation = regexp.MustCompile(`§` +
	`|\b[Ss]eeds? ?-?0\d\d\b` +
	`|\b(runner-e2e-harness|control-plane-port|real-agent-clis|field-failures|promptfoo-baseline)\b` +
	`|\b[Ii]ssues? #?\d+\b` +
	`|\b[Ff]ield failures?\b` +
	`|\bF(0[1-9]|[1-9]\d)\b( variant|:|\)| [ab]\b)` +
	`|\(F\d\d\b` +
	`|\bDESIGN\.md\b|/work/shared\b|\bV-new\b`)

// citationProse lists the files whose whole text is documentation: every line counts.
var citationProse = map[string]bool{".md": true, ".yaml": true, ".yml": true, ".txtar": true, ".sh": true, ".js": true}

// citationsIn returns "path:line: text" for every citation in text, which is the
// whole of a prose file or the comments of a Go file.
func citationsIn(path string, firstLine int, text string) []string {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		if citation.MatchString(line) {
			out = append(out, path+":"+strconv.Itoa(firstLine+i)+": "+strings.TrimSpace(line))
		}
	}
	return out
}

// goCommentCitations returns the citations in the comments of one Go file.
func goCommentCitations(t *testing.T, path string) []string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	file := fset.AddFile(path, -1, len(src))
	var s scanner.Scanner
	s.Init(file, src, func(pos token.Position, msg string) { t.Errorf("%s: %s", pos, msg) }, scanner.ScanComments)
	var out []string
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok == token.COMMENT {
			out = append(out, citationsIn(path, fset.Position(pos).Line, lit)...)
		}
	}
}

// TestNoCitations: no comment, doc page, catalog comment or script cites an issue
// number, a seed, a specification section or a numbered failure report. Such a reference cannot
// be opened by a newcomer; the rule it stands for is written out where it applies, or
// in a page under docs/.
func TestNoCitations(t *testing.T) {
	var found []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") && d.Name() != ".ci" || d.Name() == "third_party" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(path)
		switch {
		case ext == ".go":
			found = append(found, goCommentCitations(t, path)...)
		case citationProse[ext] || strings.HasPrefix(path, ".ci"+string(filepath.Separator)):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			found = append(found, citationsIn(path, 1, string(b))...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("citation a newcomer cannot open (state the rule, or link a page under docs/): %s", f)
	}
}

// TestCitationPattern pins what counts as a citation and what does not.
func TestCitationPattern(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"// Task statuses (spec §1.3).", true},
		{"// the fixture programs (seed 003, invariant 9)", true},
		{"// a serialized seed-001 state", true},
		{"// Real agent CLIs (issue 12): the pinned CLI", true},
		{"# Dependencies added by Issue #4", true},
		{"// (spec runner-e2e-harness §2.8)", true},
		{"// before they start (field failure F03)", true},
		{"// keeps the pipes open (F01): the group id", true},
		{"// called setsid (F01 variant C)", true},
		{"// DESIGN.md \"Agents\"", true},
		{"// order V-new", true},
		{"// the allowed modules (/work/shared/DEPENDENCIES.md)", true},
		{"// Seed, when set (--seed N), makes every attempt's nonce a function of the seed", false},
		{"// the board creates an issue and 2 comments", false},
		{"// docs/control-plane.md, \"Validation\"", false},
		{"// the F1 key, an F-number like F100", false},
		{"// see section 7 below", false},
	} {
		if got := citation.MatchString(tc.line); got != tc.want {
			t.Errorf("citation.MatchString(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}
