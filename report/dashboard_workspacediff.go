package report

import (
	"fmt"

	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/workspace"
)

// workspaceTurnView is one turn of a card's workspace diff: the turn, its changes, a
// one-line count ("2 changed: 1 added, 1 modified") and why it is incomplete or
// missing ("" for nothing).
type workspaceTurnView struct {
	Turn    int
	Summary string
	Note    string
	Changes []workspaceChangeView
}

// workspaceChangeView is one changed entry: path, change, what describes each side
// (text, or size and SHA-256 for a binary or unloaded file, a link's target), and the
// texts when the attempt kept them (control characters escaped; newlines kept).
type workspaceChangeView struct {
	Path, Change, Type, BeforeMeta, AfterMeta, Note string
	Before, After                                   *string
	HasText, Truncated                              bool
}

// workspaceDiffView renders r's per-turn workspace diff (nil when it has none).
func workspaceDiffView(r *result.Result) []workspaceTurnView {
	var out []workspaceTurnView
	for _, td := range r.WorkspaceDiff {
		tv := workspaceTurnView{Turn: td.Turn, Note: result.Clean(td.Note, true)}
		counts := map[string]int{}
		for _, fc := range td.Changes {
			counts[fc.Change]++
			cv := workspaceChangeView{Path: result.Clean(fc.Path, true), Change: fc.Change, Type: fc.Type, Note: result.Clean(fc.Note, true), Truncated: fc.Truncated}
			cv.BeforeMeta, cv.AfterMeta = sideMeta(fc.Type, fc.BeforeBytes, fc.BeforeSHA256, fc.BeforeTarget), sideMeta(fc.Type, fc.AfterBytes, fc.AfterSHA256, fc.AfterTarget)
			switch fc.Change {
			case workspace.ChangeAdded:
				cv.BeforeMeta = "absent"
			case workspace.ChangeRemoved:
				cv.AfterMeta = "absent"
			}
			if fc.Before != nil {
				s := result.Clean(*fc.Before, false)
				cv.Before, cv.HasText = &s, true
			}
			if fc.After != nil {
				s := result.Clean(*fc.After, false)
				cv.After, cv.HasText = &s, true
			}
			tv.Changes = append(tv.Changes, cv)
		}
		tv.Summary = fmt.Sprintf("%d changed", len(td.Changes))
		if len(td.Changes) == 0 && td.Note == "" {
			tv.Summary = "no change"
		}
		sep := ": "
		for _, ch := range []string{workspace.ChangeAdded, workspace.ChangeModified, workspace.ChangeRemoved} {
			if counts[ch] > 0 {
				tv.Summary += fmt.Sprintf("%s%d %s", sep, counts[ch], ch)
				sep = ", "
			}
		}
		if td.Truncated {
			tv.Summary += fmt.Sprintf(" (listing cut at %d entries)", workspace.DiffTurnFiles)
		}
		out = append(out, tv)
	}
	return out
}

// sideMeta describes one side of a change: "20 bytes · sha256 de25…", "→ target".
func sideMeta(typ string, n int64, sha, target string) string {
	switch {
	case typ == workspace.TypeSymlink:
		return "link → " + result.Clean(target, true)
	case sha != "":
		return fmt.Sprintf("%d bytes · sha256 %s", n, sha)
	}
	return fmt.Sprintf("%d bytes", n)
}
