package match

import (
	"fmt"
)

// KindBlockerGuidance grades a blocker-guidance journey (saved human input with the requester's identity, ownership history, no
// additional work or hires, the continuation after the human's answer, company-wide
// evidence of any unexpected manager run) from the composite JSON observation: the
// task (issue), its runs and comments, and the company view {agentId, managerId,
// actors, tasks, runs}. It takes no parameters. It passes when all of these hold:
//
//   - question: the worker (company.agentId) posted a comment on the task;
//   - answer: after the worker's first comment, a comment without an author actor (the
//     human, through the board) was saved on the task;
//   - continuation: the task's last run is the worker's, woken by issue_commented,
//     opened at or after the answer, succeeded, and the task is done;
//   - ownership: the task is assigned to the worker and every run of it is the
//     worker's;
//   - no additional work or hires: the company has only the task and only the two
//     agents the fixtures created (worker and manager);
//   - no manager run: the manager (company.managerId) has no run anywhere in the
//     company.
//
// It is not reached when no JSON document or no company view was observed.
const KindBlockerGuidance Kind = "blocker_guidance"

// blockerState is the part of the composite JSON observation blocker_guidance reads.
type blockerState struct {
	Issue *struct {
		ID              string  `json:"id"`
		Status          string  `json:"status"`
		AssigneeActorID *string `json:"assigneeActorId"`
	} `json:"issue"`
	Comments []struct {
		ID            string  `json:"id"`
		AuthorActorID *string `json:"authorActorId"`
		CreatedAt     string  `json:"createdAt"`
	} `json:"comments"`
	Company *struct {
		AgentID   string `json:"agentId"`
		ManagerID string `json:"managerId"`
		Actors    []struct {
			ID string `json:"id"`
		} `json:"actors"`
		Tasks []struct {
			ID string `json:"id"`
		} `json:"tasks"`
		Runs []struct {
			ID         string `json:"id"`
			ActorID    string `json:"actorId"`
			TaskID     string `json:"taskId"`
			Status     string `json:"status"`
			WakeReason string `json:"wakeReason"`
			OpenedAt   string `json:"openedAt"`
		} `json:"runs"`
	} `json:"company"`
}

// evalBlocker grades the blocker-guidance journey; observed lists every check that
// failed (empty when it passed) beside the question, answer and continuation found.
func evalBlocker(obs *Observation) result {
	st, missing := decodeObserved[blockerState](obs)
	if missing != "" {
		return result{missing: missing}
	}
	co := st.Company
	if co == nil || co.AgentID == "" || st.Issue == nil {
		return result{missing: "the company view (worker, task) was not observed"}
	}
	if co.ManagerID == "" {
		return result{missing: "the company has no manager agent (the fixtures of this flow create one)"}
	}
	found := map[string]string{}
	answerAt, problems := st.exchangeProblems(found)
	problems = append(problems, st.runProblems(found, answerAt)...)
	problems = append(problems, st.boardProblems()...)
	return result{passed: len(problems) == 0, observed: map[string]any{"found": found, "problems": problems}}
}

// exchangeProblems finds the worker's first comment on the task (found["question"])
// and the first comment without an author actor after it (found["answer"]). It returns
// the answer's creation time ("" when there is none) and the checks that failed.
func (st *blockerState) exchangeProblems(found map[string]string) (answerAt string, problems []string) {
	worker := st.Company.AgentID
	q := -1
	for i, c := range st.Comments {
		if c.AuthorActorID != nil && *c.AuthorActorID == worker {
			q = i
			break
		}
	}
	if q < 0 {
		return "", []string{"the worker posted no question on the task"}
	}
	found["question"] = st.Comments[q].ID
	for _, c := range st.Comments[q+1:] {
		if c.AuthorActorID == nil {
			found["answer"], answerAt = c.ID, c.CreatedAt
			break
		}
	}
	if answerAt == "" {
		problems = append(problems, "no human answer was saved after the worker's question")
	}
	return answerAt, problems
}

// runProblems checks the company's runs: every run of the task is the worker's, the
// manager has none, and the task's last run (found["continuation"]) is the worker's
// successful issue_commented continuation opened at or after answerAt. It returns the
// checks that failed.
func (st *blockerState) runProblems(found map[string]string, answerAt string) []string {
	co := st.Company
	worker, task := co.AgentID, st.Issue.ID
	var problems []string
	last := -1
	for i, r := range co.Runs {
		if r.TaskID == task {
			last = i
			if r.ActorID != worker {
				problems = append(problems, fmt.Sprintf("run %s of the task is actor %s's, not the worker's", r.ID, r.ActorID))
			}
		}
		if r.ActorID == co.ManagerID {
			problems = append(problems, fmt.Sprintf("the manager ran (run %s on task %s)", r.ID, r.TaskID))
		}
	}
	if last < 0 {
		return append(problems, "the task has no run")
	}
	r := co.Runs[last]
	found["continuation"] = r.ID
	if r.ActorID != worker || r.WakeReason != "issue_commented" || r.Status != "succeeded" || (answerAt != "" && r.OpenedAt < answerAt) {
		problems = append(problems, fmt.Sprintf("the task's last run %s (%s, woken by %s, opened %s) is not the worker's successful continuation after the answer", r.ID, r.Status, r.WakeReason, r.OpenedAt))
	}
	return problems
}

// boardProblems checks the board after the journey: the task done and still the
// worker's, no other task in the company, and no actor beside the worker and the
// manager. It returns the checks that failed.
func (st *blockerState) boardProblems() []string {
	co := st.Company
	worker, task := co.AgentID, st.Issue.ID
	var problems []string
	if st.Issue.Status != "done" {
		problems = append(problems, fmt.Sprintf("the task is %s, not done", st.Issue.Status))
	}
	if st.Issue.AssigneeActorID == nil || *st.Issue.AssigneeActorID != worker {
		problems = append(problems, "the task is no longer assigned to the worker")
	}
	if len(co.Tasks) != 1 || co.Tasks[0].ID != task {
		problems = append(problems, fmt.Sprintf("the company has %d tasks; only the worker's task was expected", len(co.Tasks)))
	}
	hires := 0
	for _, a := range co.Actors {
		if a.ID != worker && a.ID != co.ManagerID {
			hires++
		}
	}
	if hires > 0 {
		problems = append(problems, fmt.Sprintf("%d actors were added beside the worker and the manager", hires))
	}
	return problems
}
