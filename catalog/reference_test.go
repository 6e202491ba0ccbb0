package catalog

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/verdict"
)

// simulate carries out a rendered reference script on a model of the control plane
// just detailed enough to grade it: per-run user-facing messages (the present comment,
// else every comment of the run), the issue status after the last run, workspace files,
// and the composite JSON of documents, interactions, approvals, comments (the human's
// follow-ups, each once, with a null author, before the turn they start; the agent's
// own) and the company view (an interaction or approval a turn asks for is decided as
// the next turn's trigger says).
//
// Under flow crash_retry the first run is killed before it does anything (an empty
// message, status failed) and the script runs in its retry (retryOf the first).
func simulate(script *ReferenceScript, followups []string, flow Flow) *match.Observation {
	obs := &match.Observation{HasMessage: true, RunStatus: "succeeded", HasWorkspaceSnapshot: true, Files: map[string][]byte{}}
	issue := "todo"
	docs := map[string]map[string]any{}
	var docList, inters, approvals []map[string]any
	var asked []map[string]any // the decisions the last turn asked for
	var comments, runs []any   // the task's comments and runs, clock ticks as times
	tick := 0
	now := func() string { tick++; return fmt.Sprintf("2026-01-01T00:00:%02d.000Z", tick) }
	comment := func(author any, body string) {
		comments = append(comments, map[string]any{"id": fmt.Sprintf("comment-%d", len(comments)+1), "authorActorId": author, "body": body, "createdAt": now()})
	}
	for i, turn := range script.Turns {
		if issue != "done" {
			issue = "in_progress"
		}
		wake := "issue_assigned"
		followed := i > 0 && i <= len(followups)
		if followed {
			comment(nil, followups[i-1]) // the human's follow-up or answer
		}
		if turn.Trigger == "follow_up" {
			if !followed {
				comment(nil, "")
			}
			wake = "issue_commented"
		} else if i > 0 {
			wake = "interaction_resolved"
		}
		runs = append(runs, map[string]any{"id": fmt.Sprintf("run-%d", i+1), "actorId": "worker", "taskId": "task-1", "status": "succeeded", "wakeReason": wake, "openedAt": now()})
		for _, d := range asked {
			switch turn.Trigger {
			case "revision_requested":
				d["status"] = "rejected"
			case "interaction_accepted":
				d["status"] = "accepted"
			case "approval_resolved":
				d["status"] = "approved"
			}
		}
		asked = nil
		var bodies []string
		present := ""
		hasPresent := false
		for _, st := range turn.Steps {
			if e := st.Edit; e != nil {
				switch {
				case e.Write != nil:
					obs.Files[e.Path] = []byte(*e.Write)
				case e.Append != nil:
					obs.Files[e.Path] = append(obs.Files[e.Path], *e.Append...)
				case e.Delete:
					delete(obs.Files, e.Path)
				}
				continue
			}
			body := ""
			switch st.Command {
			case "report_progress":
				body = st.Args["body"].(string)
			case "finish_task":
				body, issue = st.Args["summary"].(string), "done"
			case "request_review":
				body, issue = st.Args["summary"].(string), "in_review"
			case "block_task":
				body, issue = st.Args["reason"].(string), "blocked"
			case "request_human_input", "request_approval":
				issue = "in_review"
				d := map[string]any{"id": st.Command + "-" + string(rune('a'+len(inters)+len(approvals))), "status": "pending", "targetRevisionId": nil}
				if key, ok := st.Args["targetDocumentKey"].(string); ok && docs[key] != nil {
					d["targetRevisionId"] = docs[key]["latestRevisionId"]
				}
				if st.Command == "request_approval" {
					approvals = append(approvals, d)
				} else {
					inters = append(inters, d)
				}
				asked = append(asked, d)
			case "write_document":
				key := st.Args["key"].(string)
				if docs[key] == nil {
					docs[key] = map[string]any{"key": key, "revisions": []any{}}
					docList = append(docList, docs[key])
				}
				revs := docs[key]["revisions"].([]any)
				id := key + "-revision-" + string(rune('1'+len(revs)))
				docs[key]["revisions"] = append(revs, map[string]any{"id": id, "body": st.Args["body"]})
				docs[key]["latestRevisionId"] = id
			}
			if body != "" {
				comment("worker", body)
				bodies = append(bodies, body)
				if st.Present {
					present, hasPresent = body, true
				}
			}
		}
		if !hasPresent {
			present = strings.Join(bodies, "\n")
		}
		obs.Turns = append(obs.Turns, present)
	}
	doc := map[string]any{"documents": docList, "interactions": inters, "approvals": approvals, "comments": comments,
		"issue": map[string]any{"id": "task-1", "status": issue, "assigneeActorId": "worker"},
		"company": map[string]any{"agentId": "worker", "managerId": "manager", "actors": []any{map[string]any{"id": "worker"}, map[string]any{"id": "manager"}},
			"tasks": []any{map[string]any{"id": "task-1"}}, "runs": runs}}
	if flow == "crash_retry" {
		obs.Turns = append([]string{""}, obs.Turns...)
		doc["runs"] = []any{map[string]any{"id": "run-1", "status": "failed"}, map[string]any{"id": "run-2", "status": "succeeded", "retryOf": "run-1"}}
	}
	obs.Message = strings.Join(obs.Turns, "\n")
	obs.IssueStatus = issue
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	obs.JSON = b
	return obs
}

func failing(outcomes []match.Outcome) []string {
	var out []string
	for _, o := range outcomes {
		if !o.Passed {
			out = append(out, string(o.Kind)+": "+o.Detail)
		}
	}
	return out
}

// TestReferenceScriptsGradeAsCalibrated checks, without a server, that the default
// catalog's matchers accept what each reference script produces and reject what the
// nop and wrong agents produce (the expectations of suite grader-calibration).
func TestReferenceScriptsGradeAsCalibrated(t *testing.T) {
	t.Parallel()
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	const nonce = "n0nce42"
	for _, cell := range c.Cells {
		if cell.Case.Reference == nil {
			continue
		}
		if cell.Profile.Driver.SessionLayer() {
			// The native-boundary cases grade the runner's observed permission records
			// and session turn facts (heartbeatRuns, permissions), which no server-less
			// simulation produces: the native-boundaries suite of `run --all` and
			// campaign/flows' TestACPFlows play them against a real runner.
			continue
		}
		if slices.ContainsFunc(cell.Case.Matchers, func(m match.Spec) bool { return m.Kind == match.KindTaskTitle }) {
			// The task_title oracle grades the server's agent-call ledger and the audit of
			// set_task_title (the composite JSON's agentCalls and titles), which no
			// server-less simulation produces: the task-title suites of `run --all`
			// (run_all.txtar) play them against a real server.
			continue
		}
		if cell.Case.Flow == "server_crash_retry" {
			// The server-crash oracle grades the heartbeat runner's orphaned record of
			// the run the killed server left (heartbeatRuns), which no server-less
			// simulation produces: board-idempotency of `run --all` plays it.
			continue
		}
		if cell.Case.Flow == "instruction_persistence" {
			// The agent-files oracle grades the agent's home and the attachment as
			// downloaded through the public file API after the runner saved the home
			// and the server restarted, which no server-less simulation produces: the
			// agent-files suite of `run --all` plays it against a real server.
			continue
		}
		if cell.Case.Flow == "agent_chat" {
			// An agent chat is graded from the conversation (its messages, generations
			// and handoffs), which no server-less simulation keeps: campaign/flows'
			// TestFlows and the agent-chat suites of `run --all` play it against a real
			// server.
			continue
		}
		if cell.Case.Verify != nil {
			// A verifier's command matchers grade what its commands did in the
			// workspace the agent left, which no server-less simulation runs: the
			// coding-tasks suites of `run --all` and coding_tasks.txtar play them.
			continue
		}
		t.Run(cell.ID, func(t *testing.T) {
			t.Parallel()
			r, err := cell.Render(nonce)
			if err != nil {
				t.Fatal(err)
			}
			matchers, err := match.CompileAll(r.Matchers)
			if err != nil {
				t.Fatal(err)
			}
			var obs *match.Observation
			drv := cell.Profile.Driver.String()
			if strings.HasPrefix(drv, "exec:") {
				// A real CLI plays the model script the executor derives from the reference
				// turns (oracle), or only talks (nop).
				drv = "reference"
				if cell.Profile.DriverConfig["script"] == "nop" {
					drv = "nop"
				}
			}
			hostile := strings.HasPrefix(drv, "hostile:")
			if hostile {
				// the hostile agent attacks, then carries out the reference script: what
				// the host observed of the attack (a leak, a limit), not a matcher, fails it
				drv = "reference"
			}
			switch drv {
			case "reference", "leaky":
				// leaky carries out the reference script (and leaks: the leak, not a
				// matcher, must fail it)
				obs = simulate(r.Reference, r.Followups, cell.Case.Flow)
			case "wrong":
				wrong, err := cell.Render("wr0ng99")
				if err != nil {
					t.Fatal(err)
				}
				obs = simulate(wrong.Reference, r.Followups, cell.Case.Flow)
			case "nop":
				obs = &match.Observation{HasMessage: true, IssueStatus: "in_progress", RunStatus: "succeeded", HasWorkspaceSnapshot: true, Files: map[string][]byte{},
					JSON: json.RawMessage(`{"documents":[],"interactions":[],"approvals":[]}`)}
				for range cell.Case.ExpectedRunCount {
					obs.Turns = append(obs.Turns, "")
				}
			default:
				t.Fatalf("unexpected driver %s", cell.Profile.Driver.String())
			}
			// What the runner records, never the declaration: it opens every run through
			// the native run protocol (a profile declared legacy must fail).
			obs.RuntimeMode, obs.Environment = "native", cell.Environment.ID
			fails := failing(match.Evaluate(matchers, obs))
			passed := len(fails) == 0
			if want := cell.ExpectedVerdict != verdict.Failed || cell.Profile.Driver.String() == "leaky" || hostile; passed != want {
				t.Errorf("all matchers passed = %v, want %v; failing: %v", passed, want, fails)
			}
		})
	}
}
