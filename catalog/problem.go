package catalog

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Problem is one thing wrong with a catalog, at a position in a catalog file (Pos.File
// is "" for problems of the catalog as a whole, such as the total matrix size).
type Problem struct {
	Pos
	Message string
}

// String renders "file:line:column: message" ("file:line: message" when the column is
// unknown, just the message when the file is).
func (p Problem) String() string {
	return p.Pos.String() + p.Message
}

// String renders the position as a message prefix "file:line:column: ", or "" for the
// zero Pos.
func (p Pos) String() string {
	if p.File == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(p.Line))
		if p.Column > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(p.Column))
		}
	}
	b.WriteString(": ")
	return b.String()
}

// Location renders the position as "file:line:column" ("file:line" when the column
// is unknown, "file" when the line is, "(unknown position)" for the zero Pos).
func (p Pos) Location() string {
	if p.File == "" {
		return "(unknown position)"
	}
	return strings.TrimSuffix(p.String(), ": ")
}

// ValidationError is every problem Load found in a catalog, sorted by file, line and
// column (problems without a position first). It is the only error type Load returns
// for bad catalog content; I/O failures of the file system are wrapped errors.
type ValidationError struct {
	Problems []Problem
}

// Error renders a count line followed by one problem per line.
func (e *ValidationError) Error() string {
	var b strings.Builder
	if len(e.Problems) == 1 {
		b.WriteString("catalog is invalid: 1 problem")
	} else {
		fmt.Fprintf(&b, "catalog is invalid: %d problems", len(e.Problems))
	}
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// problems collects problems while loading and validating.
type problems struct {
	list []Problem
	// limit caps how many problems are kept, so that a pathological file cannot make
	// the report itself unbounded.
	limit   int
	dropped int
}

const maxProblems = 1000

func (ps *problems) add(p Pos, format string, args ...any) {
	if len(ps.list) >= ps.limit {
		ps.dropped++
		return
	}
	ps.list = append(ps.list, Problem{Pos: p, Message: fmt.Sprintf(format, args...)})
}

func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	out := slices.Clone(ps.list)
	slices.SortStableFunc(out, func(a, b Problem) int {
		return cmp.Or(
			strings.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Column, b.Column),
		)
	})
	if ps.dropped > 0 {
		out = append(out, Problem{Message: fmt.Sprintf("%d more problems not shown", ps.dropped)})
	}
	return &ValidationError{Problems: out}
}
