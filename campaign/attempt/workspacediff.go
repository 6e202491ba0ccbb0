package attempt

import (
	"context"
	"fmt"

	"github.com/agentproof/agentproof/workspace"
)

// WorkspaceDiffFile is the evidence file of the per-turn workspace diff
// (docs/processes.md "Workspace diff per turn").
const WorkspaceDiffFile = "workspace-diff.json"

// WorkspaceDiffSchema tags workspace-diff.json.
const WorkspaceDiffSchema = "agentproof.workspace-diff/v1"

// turnDiffs records what each turn changed in the workspace: the flow calls settled
// when turn n's run settles; it snapshots the workspace (workspace.DiffLimits) and
// diffs it against the snapshot before (the fixtures' one, before turn 1). Used by one
// flow goroutine only.
type turnDiffs struct {
	root  string
	prev  *workspace.Snapshot
	diffs []workspace.TurnDiff
}

// newTurnDiffs starts from before (nil when the first snapshot failed: every turn then
// says so, with why).
func newTurnDiffs(root string, before *workspace.Snapshot, why string) *turnDiffs {
	d := &turnDiffs{root: root, prev: before}
	if before == nil {
		d.diffs = append(d.diffs, workspace.TurnDiff{Turn: 1, Changes: []workspace.FileChange{}, Note: "no workspace diff: the snapshot before turn 1 failed: " + why})
	}
	return d
}

func (d *turnDiffs) settled(ctx context.Context, n int) {
	if d.prev == nil {
		return
	}
	after, err := workspace.Take(ctx, d.root, workspace.DiffLimits)
	if err != nil {
		d.diffs = append(d.diffs, workspace.TurnDiff{Turn: n, Changes: []workspace.FileChange{}, Note: fmt.Sprintf("no workspace diff: the snapshot after turn %d failed: %v", n, err)})
		d.prev = nil // later turns have nothing to compare with
		return
	}
	d.diffs = append(d.diffs, workspace.Diff(n, d.prev, after))
	d.prev = after
}

// workspaceDiffDocument is workspace-diff.json: {schema, limits, turns}.
func workspaceDiffDocument(turns []workspace.TurnDiff) any {
	return struct {
		Schema string `json:"schema"`
		Limits struct {
			FileTextBytes int `json:"fileTextBytes"`
			TurnTextBytes int `json:"turnTextBytes"`
			TurnFiles     int `json:"turnFiles"`
		} `json:"limits"`
		Turns []workspace.TurnDiff `json:"turns"`
	}{Schema: WorkspaceDiffSchema, Limits: struct {
		FileTextBytes int `json:"fileTextBytes"`
		TurnTextBytes int `json:"turnTextBytes"`
		TurnFiles     int `json:"turnFiles"`
	}{workspace.DiffTextBytes, workspace.DiffTurnTextBytes, workspace.DiffTurnFiles}, Turns: turns}
}
