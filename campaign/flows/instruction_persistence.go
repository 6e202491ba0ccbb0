package flows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
)

func init() {
	register(Flow{
		FlowContract: catalog.FlowContract{
			Name:  "instruction_persistence",
			Needs: []catalog.Need{{Field: catalog.FieldFollowups, Count: 1, What: "the fresh task's prompt"}},
			Check: freshPromptDisclosesNothing,
		},
		Play:          playInstructionPersistence,
		ServerProcess: restartsOrCrashes,
	})
}

// freshPromptDisclosesNothing is the rule of flow instruction_persistence's case: the
// fresh task's prompt (its one followup) must not disclose what turn 1 saved, so it may
// use no template variable at all (every one derives from the nonce).
func freshPromptDisclosesNothing(cs *catalog.Case, p catalog.CaseProblems) {
	if len(cs.Followups) == 1 && strings.Contains(cs.Followups[0], "{{") {
		p.Add(&cs.Followups[0], "the fresh task's prompt (followups[0]) must not disclose the nonce: it may use no template variable")
	}
}

// playInstructionPersistence is flow instruction_persistence (docs/files.md "Flow
// instruction_persistence"): run 1 (the fixtures'
// task, whose prompt discloses the nonces) must leave the agent's home saved — the
// heartbeat runner's save receipt of that run, through the public API —; the human
// restarts the server and creates a fresh task for the same agent whose prompt (the
// case's one follow-up) discloses nothing of what was saved; the agent must read its
// home back and register the deliverable in the fresh task's run. The flow does not
// judge the bytes: the observe stage downloads the home and the artifacts through the
// public file API and the matchers grade them. The fresh task is Outcome.Tasks[0];
// its run is turn 2.
//
// A run 1 that did not succeed is the candidate's problem; a run whose home the runner
// did not save (no receipt, or a save error) is a harness fault: saving is the
// control plane's job, never the agent's.
func playInstructionPersistence(ctx context.Context, s *Session) Outcome {
	var out Outcome
	v := out.wait(ctx, s, 1)
	if v == nil {
		return out
	}
	run := v.runs[0]
	if run.Status != controlplane.RunSucceeded {
		out.Problems = append(out.Problems, fmt.Sprintf("turn 1 (run %s) ended %s, not succeeded: nothing of the home to carry to a fresh task", run.ID, run.Status))
		return out
	}
	prompt, err := s.followup()
	if err != nil {
		out.Err = err
		return out
	}
	if s.Restart == nil {
		out.Err = permanent(errors.New("flow instruction_persistence needs a harness that can restart the server; this one cannot"))
		return out
	}
	receipt := ""
	for _, r := range v.records {
		if r.RunID == run.ID {
			if r.HomeSaveError != "" {
				out.Err = permanent(fmt.Errorf("run %s: the runner could not save the agent's home: %s", run.ID, r.HomeSaveError))
				return out
			}
			receipt = r.HomeReceiptID
		}
	}
	if receipt == "" {
		out.Err = permanent(fmt.Errorf("run %s settled without a save receipt of the agent's home", run.ID))
		return out
	}
	s.log("run %s: the agent's home was saved (receipt %s)", run.ID, receipt)
	if v.task == nil || v.task.AssigneeActorID == nil {
		out.Err = permanent(fmt.Errorf("task %s has no assignee to give the fresh task to", s.TaskID))
		return out
	}
	agent := *v.task.AssigneeActorID
	if out.Err = restart(ctx, s, "before the fresh task"); out.Err != nil {
		return out
	}
	in, err := json.Marshal(map[string]any{"title": v.task.Title + " (fresh task)", "description": prompt, "assigneeActorId": agent})
	if err != nil {
		out.Err = permanent(err)
		return out
	}
	out.submit()
	res, err := s.Board.ApplyBoard(ctx, controlplane.BoardOp{Kind: controlplane.BoardCreateIssue, Input: in, IdempotencyKey: "fresh-task-" + s.Rendered.Nonce})
	if err != nil {
		out.Err = BoardFault("creating the fresh task", err)
		return out
	}
	out.Tasks = append(out.Tasks, res.ID)
	s.log("created the fresh task %s for agent %s (its prompt names no nonce)", res.ID, agent)
	fresh := s.forTask(res.ID, 1)
	if v = out.wait(ctx, fresh, 1); v == nil {
		return out
	}
	s.log("the fresh task's run %s ended %s", v.runs[0].ID, v.runs[0].Status)
	return out
}

// forTask is a session of the same attempt for another task the flow created, whose
// turn n is the attempt's turn n+before (TurnSettled is called with the attempt's
// turn number).
func (s *Session) forTask(task string, before int) *Session {
	c := *s
	c.TaskID, c.settled = task, nil
	if s.TurnSettled != nil {
		c.TurnSettled = func(ctx context.Context, n int) { s.TurnSettled(ctx, n+before) }
	}
	return &c
}
