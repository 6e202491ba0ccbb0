package workspace

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf8"
)

// Diff bounds (docs/processes.md "Workspace diff per turn"; bytes unless said
// otherwise).
const (
	// DiffTextBytes is the most text kept of one side (before or after) of one changed
	// file (8 KiB); a longer text is cut at a rune boundary and marked truncated.
	DiffTextBytes = 8 << 10
	// DiffTurnTextBytes is the most text kept over one turn's changes (64 KiB); the
	// changes beyond it keep their hashes and sizes only.
	DiffTurnTextBytes = 64 << 10
	// DiffTurnFiles is the most changed entries listed for one turn (200); the turn
	// is then marked truncated.
	DiffTurnFiles = 200
)

// Changes of a FileChange.
const (
	ChangeAdded    = "added"
	ChangeRemoved  = "removed"
	ChangeModified = "modified"
)

// FileChange is one workspace entry that differs between two snapshots: its path, the
// change (ChangeAdded, ChangeRemoved, ChangeModified), its type after (before, when
// removed), and each side's size and SHA-256 (hex; "" when absent, not hashed or not a
// file) or link target. Before and After hold the text of a text file (valid UTF-8
// without NUL bytes, loaded by the snapshot) within the diff bounds; a binary file, one
// the snapshot did not load, or one past the turn's text budget is described by size
// and hash only, Binary and Note saying which. Truncated marks a text cut at
// DiffTextBytes.
type FileChange struct {
	Path         string  `json:"path"`
	Change       string  `json:"change"`
	Type         string  `json:"type"`
	BeforeBytes  int64   `json:"beforeBytes"`
	AfterBytes   int64   `json:"afterBytes"`
	BeforeSHA256 string  `json:"beforeSha256,omitempty"`
	AfterSHA256  string  `json:"afterSha256,omitempty"`
	BeforeTarget string  `json:"beforeTarget,omitempty"`
	AfterTarget  string  `json:"afterTarget,omitempty"`
	Binary       bool    `json:"binary,omitempty"`
	Before       *string `json:"before,omitempty"`
	After        *string `json:"after,omitempty"`
	Truncated    bool    `json:"truncated,omitempty"`
	Note         string  `json:"note,omitempty"`
}

// TurnDiff is what one turn changed in the workspace: the turn (1-based), its changes
// in path order (at most DiffTurnFiles), and Truncated when changes were left out
// (more than DiffTurnFiles, or a snapshot whose listing was itself truncated); Note
// says why a turn has no diff (a snapshot failed), with no changes.
type TurnDiff struct {
	Turn      int          `json:"turn"`
	Changes   []FileChange `json:"changes"`
	Truncated bool         `json:"truncated,omitempty"`
	Note      string       `json:"note,omitempty"`
}

// DiffLimits is the snapshot limits a per-turn snapshot is taken with: files up to
// 1 MiB loaded, 16 MiB over the snapshot (so a turn's snapshot stays small; a larger
// file is compared by hash), 1 GiB hashed (beyond it, files compare by size only) and
// 20 000 entries listed (a hostile workspace costs every turn a bounded look).
var DiffLimits = Limits{MaxFileBytes: 1 << 20, MaxTotalBytes: 16 << 20, MaxHashBytes: 1 << 30, MaxEntries: 20_000}

// Diff compares two snapshots of the same workspace (before and after turn) within the
// diff bounds. An entry is changed when it appears on one side only, its type differs,
// or its hash, size or link target differs.
func Diff(turn int, before, after *Snapshot) TurnDiff {
	d := TurnDiff{Turn: turn, Changes: []FileChange{}, Truncated: before.Truncated || after.Truncated}
	old := make(map[string]*Entry, len(before.Manifest))
	for i := range before.Manifest {
		old[before.Manifest[i].Path] = &before.Manifest[i]
	}
	seen := make(map[string]bool, len(after.Manifest))
	var changes []FileChange
	for i := range after.Manifest {
		a := &after.Manifest[i]
		seen[a.Path] = true
		b := old[a.Path]
		if b != nil && same(b, a) {
			continue
		}
		fc := FileChange{Path: a.Path, Change: ChangeAdded, Type: a.Type}
		if b != nil {
			fc.Change = ChangeModified
			fc.BeforeBytes, fc.BeforeSHA256, fc.BeforeTarget = b.Bytes, b.SHA256, b.Target
		}
		fc.AfterBytes, fc.AfterSHA256, fc.AfterTarget = a.Bytes, a.SHA256, a.Target
		changes = append(changes, fc)
	}
	for i := range before.Manifest {
		b := &before.Manifest[i]
		if !seen[b.Path] {
			changes = append(changes, FileChange{Path: b.Path, Change: ChangeRemoved, Type: b.Type, BeforeBytes: b.Bytes, BeforeSHA256: b.SHA256, BeforeTarget: b.Target})
		}
	}
	sortChanges(changes)
	if len(changes) > DiffTurnFiles {
		changes, d.Truncated = changes[:DiffTurnFiles], true
	}
	budget := DiffTurnTextBytes
	for i := range changes {
		fc := &changes[i]
		if fc.Type != TypeFile {
			continue
		}
		bt, bok := textOf(before, fc.Path, fc.Change != ChangeAdded)
		at, aok := textOf(after, fc.Path, fc.Change != ChangeRemoved)
		switch {
		case bok == sideBinary || aok == sideBinary:
			fc.Binary, fc.Note = true, "binary: compared by SHA-256"
		case bok == sideNotLoaded || aok == sideNotLoaded:
			fc.Note = "not loaded by the snapshot (over its size limits): compared by SHA-256"
		case len(bt)+len(at) > budget:
			fc.Note = "text left out: the turn's text budget is spent"
		default:
			if fc.Change != ChangeAdded {
				s, cut := clipText(bt)
				fc.Before, fc.Truncated = &s, cut
				budget -= len(s)
			}
			if fc.Change != ChangeRemoved {
				s, cut := clipText(at)
				fc.After, fc.Truncated = &s, fc.Truncated || cut
				budget -= len(s)
			}
		}
	}
	d.Changes = changes
	return d
}

func same(a, b *Entry) bool {
	return a.Type == b.Type && a.Bytes == b.Bytes && a.SHA256 == b.SHA256 && a.Target == b.Target && a.Mode == b.Mode
}

type side int

const (
	sideText side = iota
	sideBinary
	sideNotLoaded
	sideAbsent
)

// textOf returns the loaded content of path in s and whether it is text; present is
// false for the absent side of an added or removed file.
func textOf(s *Snapshot, path string, present bool) ([]byte, side) {
	if !present {
		return nil, sideAbsent
	}
	b, ok := s.Files[path]
	if !ok {
		return nil, sideNotLoaded
	}
	if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		return nil, sideBinary
	}
	return b, sideText
}

// clipText cuts b to DiffTextBytes at a rune boundary.
func clipText(b []byte) (string, bool) {
	if len(b) <= DiffTextBytes {
		return string(b), false
	}
	n := DiffTextBytes
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n]), true
}

func sortChanges(cs []FileChange) {
	slices.SortFunc(cs, func(a, b FileChange) int { return strings.Compare(a.Path, b.Path) })
}
