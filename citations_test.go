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

// citationsIn returns "path:line: text" for every line of text with a citation; text
// is the whole of a prose file or one comment of a Go file, and firstLine the line it
// starts on. The pattern runs once over the whole text (no citation spans a line).
func citationsIn(path string, firstLine int, text string) []string {
	if !mayCite(text) {
		return nil
	}
	var out []string
	last := -1 // the line of the previous hit, reported once
	for _, m := range citation.FindAllStringIndex(text, -1) {
		start := strings.LastIndexByte(text[:m[0]], '\n') + 1
		line := strings.Count(text[:start], "\n")
		if line == last {
			continue
		}
		last = line
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text) - start
		}
		out = append(out, path+":"+strconv.Itoa(firstLine+line)+": "+strings.TrimSpace(text[start:start+end]))
	}
	return out
}

// citationNeedles are literal parts of which every citation contains one (beside an F
// followed by a digit, which mayCite looks for apart).
var citationNeedles = []string{"§", "eed", "runner-e2e-harness", "control-plane-port", "real-agent-clis",
	"field-failures", "promptfoo-baseline", "ssue", "ield failure", "DESIGN.md", "/work/shared", "V-new"}

// mayCite reports whether text may hold a citation: it contains one of citationNeedles
// or an F followed by a digit. Looking for literals is cheap; the pattern is not under
// -race (seconds over the repository), so it only runs over the texts that may match.
func mayCite(text string) bool {
	for _, n := range citationNeedles {
		if strings.Contains(text, n) {
			return true
		}
	}
	for i := strings.IndexByte(text, 'F'); i >= 0 && i+1 < len(text); {
		if c := text[i+1]; c >= '0' && c <= '9' {
			return true
		}
		j := strings.IndexByte(text[i+1:], 'F')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// generatedDirs are the directories .gitignore lists from the repository's root (lines
// "/dir/"): output of runs and CI (.ci/artifacts holds a whole campaign's evidence,
// agents' transcripts among it), not text of the repository.
func generatedDirs(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(".gitignore")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "/") && strings.HasSuffix(l, "/") && len(l) > 2 {
			out[filepath.FromSlash(strings.Trim(l, "/"))] = true
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
	t.Parallel()
	generated := generatedDirs(t)
	var found []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") && d.Name() != ".ci" || d.Name() == "third_party" || d.Name() == "node_modules" || generated[path]) {
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
	t.Parallel()
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
		if tc.want && !mayCite(tc.line) {
			t.Errorf("mayCite(%q) = false for a citation: the pattern would never see it", tc.line)
		}
	}
}

// TestCitationsInLines: citationsIn names each line with a citation once, with its
// number counted from the text's first line, and nothing else.
func TestCitationsInLines(t *testing.T) {
	t.Parallel()
	got := citationsIn("f.md", 10, "plain\n  issue 12 and issue 13  \nno reference\n(spec §2)")
	want := []string{"f.md:11: issue 12 and issue 13", "f.md:13: (spec §2)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("citationsIn = %q, want %q", got, want)
	}
	if got := citationsIn("f.md", 1, "nothing here\n"); len(got) != 0 {
		t.Errorf("citationsIn of a clean text = %q", got)
	}
}
