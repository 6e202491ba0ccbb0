package flows

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentproof/agentproof/controlplane"
)

// playWarmThreeTurn is flow warm_three_turn: after each turn the workspace file must
// hold exactly the lines of the turns so far (T1…Tn, each with the nonce) and, but
// for the last, the task must be in review; the human then posts the next follow-up.
func playWarmThreeTurn(ctx context.Context, s *Session) Outcome {
	var out Outcome
	v, err := waitTurn(ctx, s, 1)
	if err != nil {
		out.Err = err
		return out
	}
	followups := s.Rendered.Followups
	for turn := 1; turn <= len(followups)+1; turn++ {
		if msg := checkWarmFile(s, turn); msg != "" {
			out.Problems = append(out.Problems, msg)
		}
		if turn > len(followups) {
			break
		}
		if v.task == nil || v.task.Status != controlplane.TaskInReview {
			out.Problems = append(out.Problems, fmt.Sprintf("turn %d was not submitted for review", turn))
			break
		}
		out.submit()
		s.log("posting follow-up %d", turn)
		if _, err := s.Board.Comment(ctx, s.TaskID, followups[turn-1]); err != nil {
			out.Err = BoardFault(fmt.Sprintf("posting follow-up %d", turn), err)
			return out
		}
		if v, out.Err = waitTurn(ctx, s, turn+1); out.Err != nil {
			return out
		}
	}
	return out
}

// checkWarmFile checks the warm case's workspace file after turn n: it must hold
// exactly the first n lines of the final expected content (T1…Tn); it returns the
// problem, or "".
func checkWarmFile(s *Session, n int) string {
	rel := s.Rendered.WorkspaceFile
	if rel == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(s.Workspace, filepath.FromSlash(rel)))
	if err != nil {
		return fmt.Sprintf("after turn %d the workspace file %s is missing", n, rel)
	}
	var want strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&want, "T%d-%s\n", i, s.Rendered.Nonce)
	}
	if string(b) != want.String() {
		return fmt.Sprintf("after turn %d the workspace file %s does not hold lines T1…T%d", n, rel, n)
	}
	return ""
}
