package attempt

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/campaign/flows"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
	"github.com/agentproof/agentproof/workspace"
)

// Observation is what the observe stage saw after the flow: the observation the
// matchers grade (nil when nothing could be observed), the heartbeat runner's records
// of the task's runs (how each process was launched and how it ended: the verdict
// reads timeouts, floods, collector errors and printed secrets from them), the facts
// result.json reports, and the fault that kept evidence from being collected (the
// board did not answer, the workspace could not be read; nil for none).
type Observation struct {
	Match *match.Observation
	Runs  []api.HeartbeatRun
	Facts campaign.Facts
	Fault *verdict.Fault
}

// observe reads the company state and the heartbeat records through the board and the
// workspace from disk (package workspace: bounded, links listed, never followed), writes snapshots/api-state.json, snapshots/heartbeat-runs.json
// and workspace-manifest.json, and builds the observation (what the matchers grade, messages with their source).
// The runtime mode, environment and runtime facts it reports are those the heartbeat
// runner recorded launching each run (api.LaunchFacts), never the catalog's. The
// observed tasks are the fixtures' task and the tasks the flow created (fl.Tasks), in
// that order. It downloads through the public file API the agent's home (every
// managed file of its AGENT_HOME) and the bytes of the tasks' artifacts, each checked
// against its SHA-256 (observeFiles; docs/files.md "Observed bytes").
func (x *LocalExecutor) observe(ctx context.Context, a *attempt, p *Provisioned, f *Fixtures, fl *FlowOutcome) Observation {
	co := p.Instance.board().Company(f.CompanyID)
	tasks := append([]string{f.TaskID}, fl.Tasks...)
	st, recs, settled := awaitProcesses(ctx, a, co, tasks, x.PollInterval, fl.Final)
	if !settled {
		// The wait ended without a settled look (a look failed, a process still ran,
		// the attempt's deadline): look again, and report what fails now.
		var err error
		if st, err = co.Snapshot(ctx); err != nil {
			return Observation{Fault: verdict.HarnessFault(fmt.Errorf("reading the company state: %s", f.Secrets.RedactText(err.Error())), true)}
		}
		if recs, err = co.HeartbeatRuns(ctx); err != nil {
			return Observation{Fault: verdict.HarnessFault(fmt.Errorf("reading the heartbeat runs: %s", f.Secrets.RedactText(err.Error())), true)}
		}
	}
	perms, err := co.Permissions(ctx, f.TaskID)
	if err != nil {
		return Observation{Fault: verdict.HarnessFault(fmt.Errorf("reading the permission interactions: %s", f.Secrets.RedactText(err.Error())), true)}
	}
	writeJSON(a.ev, f.Secrets, "snapshots/api-state.json", st)
	writeJSON(a.ev, f.Secrets, "snapshots/heartbeat-runs.json", recs)
	writeJSON(a.ev, f.Secrets, "snapshots/permissions.json", perms)
	o := Observation{Facts: campaign.Facts{IssueID: f.TaskID, IssueIdentifier: f.Identifier, RunIDs: []string{}}}
	runs := taskRuns(&st, tasks...)
	for _, r := range recs {
		if slices.Contains(tasks, r.TaskID) {
			o.Runs = append(o.Runs, r)
		}
	}
	calls, err := agentCalls(ctx, co, runs)
	if err != nil {
		return Observation{Fault: verdict.HarnessFault(fmt.Errorf("reading the agent calls: %s", f.Secrets.RedactText(err.Error())), true)}
	}
	writeJSON(a.ev, f.Secrets, "snapshots/agent-calls.json", calls)
	files, err := observeFiles(ctx, co, &st, f.AgentID, tasks)
	if err != nil {
		return Observation{Fault: verdict.HarnessFault(fmt.Errorf("downloading the agent's home and the artifacts: %s", f.Secrets.RedactText(err.Error())), true)}
	}
	writeJSON(a.ev, f.Secrets, "snapshots/agent-home.json", files.home)
	writeJSON(a.ev, f.Secrets, "snapshots/home-receipts.json", files.receipts)
	o.Match = matchObservation(&st, f, runs, o.Runs, perms, calls, tasks...)
	files.apply(o.Match)
	observeRuntime(&o, a.plan, f)
	o.Facts.TurnTimings = turnTimings(runs, o.Runs, fl.Submitted)
	for _, r := range runs {
		o.Facts.RunIDs = append(o.Facts.RunIDs, r.ID)
	}
	o.Facts.Termination, o.Facts.Usage = terminationAndUsage(o.Runs)
	snap, werr := workspace.Take(ctx, p.Workspace, workspace.Limits{})
	if werr != nil {
		o.Fault = verdict.HarnessFault(fmt.Errorf("workspace snapshot: %s", f.Secrets.RedactText(werr.Error())), false)
		return o
	}
	o.Match.Files, o.Match.HasWorkspaceSnapshot = snap.Files, true
	writeJSON(a.ev, f.Secrets, "workspace-manifest.json", snap.Document())
	if len(fl.WorkspaceDiffs) > 0 {
		// Through the guard like all evidence; result.json carries it too (sanitised
		// with the secrets when written), for the dashboard.
		writeJSON(a.ev, f.Secrets, WorkspaceDiffFile, workspaceDiffDocument(fl.WorkspaceDiffs))
		o.Facts.WorkspaceDiff = fl.WorkspaceDiffs
	}
	return o
}

// secretForms is every text of the secret set the matchers must keep out of their
// outcomes: each value and each of its encoded forms (redact.Set.Forms: base64 at
// every offset, hex, percent- and JSON-escaped), so that an encoded copy an agent
// posted is redacted from a matcher's detail like the value itself.
func secretForms(secrets *redact.Set) []string {
	forms := secrets.Forms()
	out := make([]string, len(forms))
	for i, f := range forms {
		out[i] = f.Text
	}
	return out
}

// processSettle bounds how long observe waits for the agent processes of settled runs
// to end (awaitProcesses).
const processSettle = 15 * time.Second

// awaitProcesses waits, at most processSettle, until no heartbeat record of the task
// is still launching (its process running) while its run has already settled: an agent
// that completed its own run (an exec agent, a CLI through its MCP tools) may still be
// exiting. Only a finished record carries the process's termination (how it ended,
// its event stream, the processes that escaped its group), which the verdict reads;
// and the server then stops without agents to stop. A run still running (a missed
// deadline) is not waited for. It returns the state and records of the look that found
// nothing to wait for (settled true): observe grades that look, as fresh as one taken
// right after. The first look is the flow's last one when it has one (first: taken
// after the flow's last action, nothing has happened since that observe should see).
// Errors end the wait with settled false (observe looks again and reports them), as
// does a process still running after processSettle or the context's end.
func awaitProcesses(ctx context.Context, a *attempt, co *client.Company, tasks []string, poll time.Duration, first *flows.Look) (controlplane.State, []api.HeartbeatRun, bool) {
	if poll <= 0 {
		poll = 50 * time.Millisecond
	}
	start := time.Now()
	for {
		var st controlplane.State
		var recs []api.HeartbeatRun
		if first != nil {
			st, recs, first = first.State, first.Records, nil
		} else {
			var err error
			if st, err = co.Snapshot(ctx); err != nil {
				return controlplane.State{}, nil, false
			}
			if recs, err = co.HeartbeatRuns(ctx); err != nil {
				return controlplane.State{}, nil, false
			}
		}
		var pending []string
		for _, r := range recs {
			if !slices.Contains(tasks, r.TaskID) || r.State != api.RunLaunching {
				continue
			}
			for _, run := range st.Runs {
				if run.ID == r.RunID && run.Status != controlplane.RunRunning {
					pending = append(pending, r.RunID)
				}
			}
		}
		switch {
		case len(pending) == 0:
			if waited := time.Since(start); waited > poll {
				a.log.note("waited %d ms for the agent processes of settled runs to end", waited.Milliseconds())
			}
			return st, recs, true
		case time.Since(start) > processSettle:
			a.log.note("the agent process of settled run(s) %s still ran %s after the flow; the server stops it", strings.Join(pending, ", "), processSettle)
			return controlplane.State{}, nil, false
		}
		select {
		case <-ctx.Done():
			return controlplane.State{}, nil, false
		case <-time.After(poll):
		}
	}
}

// taskRuns returns the runs of the tasks in state order.
func taskRuns(st *controlplane.State, tasks ...string) []*controlplane.Run {
	var out []*controlplane.Run
	for _, r := range st.Runs {
		if slices.Contains(tasks, r.TaskID) {
			out = append(out, r)
		}
	}
	return out
}

// matchObservation builds the persisted-state part of the observation: the task's
// status, the last run's status, every run's message (turn by turn), the artifacts and
// the composite JSON {issue, tasks, runs, interactions, documents, approvals, comments,
// heartbeatRuns, permissions, company}: approvals are the ones linked to the task;
// comments are the task's persisted comments in order, the human's with a null
// authorActorId;
//
// more are the tasks the flow created (FlowOutcome.Tasks): their runs are in runs,
// their artifacts and comments are the observation's too, tasks lists every observed
// task in order (the fixtures' first), and the observed task status is the last
// task's (the task of the last turn); heartbeatRuns are the heartbeat runner's records of the task's runs
// (what it observed launching them; an ACP run's turn facts under acp), permissions
// the task's permission interactions (api.Permission), both as the board serves them;
// company is the company-wide view.
func matchObservation(st *controlplane.State, f *Fixtures, runs []*controlplane.Run, recs []api.HeartbeatRun, perms []api.Permission, calls []api.AgentCallList, more ...string) *match.Observation {
	task := f.TaskID
	all := append([]string{task}, more...)
	obs := &match.Observation{Secrets: secretForms(f.Secrets), HasArtifacts: true, HasMessage: len(runs) > 0}
	var t *controlplane.Task
	tasks := []*controlplane.Task{}
	for _, id := range all {
		for _, x := range st.Tasks {
			if x.ID == id {
				tasks = append(tasks, x)
				obs.IssueStatus = string(x.Status)
				if id == task {
					t = x
				}
			}
		}
	}
	for _, run := range runs {
		obs.RunStatus = string(run.Status)
		obs.Turns = append(obs.Turns, st.RunMessage(run))
	}
	obs.Message = strings.Join(obs.Turns, "\n")
	for _, ar := range st.Artifacts {
		if slices.Contains(all, ar.TaskID) {
			obs.Artifacts = append(obs.Artifacts, match.Artifact{Name: ar.Filename, MimeType: ar.ContentType, SHA256: ar.SHA256, ByteSize: ar.ByteSize})
		}
	}
	var docs []*controlplane.Document
	var inters []*controlplane.Interaction
	comments := []*controlplane.Comment{}
	for _, c := range st.Comments {
		if slices.Contains(all, c.TaskID) {
			comments = append(comments, c)
		}
	}
	for _, d := range st.Documents {
		if d.TaskID == task {
			docs = append(docs, d)
		}
	}
	for _, in := range st.Interactions {
		if in.TaskID == task {
			inters = append(inters, in)
		}
	}
	if recs == nil {
		recs = []api.HeartbeatRun{}
	}
	if perms == nil {
		perms = []api.Permission{}
	}
	approvals := []*controlplane.Approval{}
	for _, ap := range st.Approvals {
		if slices.Contains(ap.TaskIDs, task) {
			approvals = append(approvals, ap)
		}
	}
	if b, err := json.Marshal(map[string]any{"issue": t, "tasks": tasks, "runs": runs, "interactions": inters, "documents": docs, "approvals": approvals,
		"comments": comments, "heartbeatRuns": recs, "permissions": perms, "company": companyView(st, f),
		"agentCalls": nonNilCalls(calls), "titles": titleView(st, f, t, runs), "chat": chatView(st, f)}); err == nil {
		obs.JSON = b
	}
	return obs
}

// agentCalls reads the agent-call ledger of each of the task's runs, in run order
// (api.AgentCallList: what the server saw the run's agent token request).
func agentCalls(ctx context.Context, co *client.Company, runs []*controlplane.Run) ([]api.AgentCallList, error) {
	out := []api.AgentCallList{}
	for _, r := range runs {
		l, err := co.RunCalls(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

func nonNilCalls(c []api.AgentCallList) []api.AgentCallList {
	if c == nil {
		return []api.AgentCallList{}
	}
	return c
}

// titleView is the task-title part of the composite JSON (for the prompt-only task
// title fixtures: the call input, the result, the saved task and the run-attributed
// audit correlated): created, the title saved at creation (the fixtures read it by the
// creation response's id); changes, every applied set_task_title of the task in audit
// order {commandId, at, runId, actorId, title} (the title from the command's
// idempotency record, trimmed as the control plane saves it); afterRun, the title at
// the end of each of the task's runs {runId, title} (created, then the last change
// made by that run or an earlier one); current, the saved title now.
func titleView(st *controlplane.State, f *Fixtures, t *controlplane.Task, runs []*controlplane.Run) map[string]any {
	type change struct {
		CommandID string  `json:"commandId"`
		At        string  `json:"at"`
		RunID     *string `json:"runId"`
		ActorID   *string `json:"actorId"`
		Title     string  `json:"title"`
	}
	type after struct {
		RunID string `json:"runId"`
		Title string `json:"title"`
	}
	inputs := map[string]string{}
	for _, rec := range st.Idempotency {
		if rec.Result.CommandKind == string(controlplane.CommandSetTaskTitle) && slices.Contains(rec.Result.EntityRefs, "task:"+f.TaskID) {
			var in struct {
				Title string `json:"title"`
			}
			if json.Unmarshal([]byte(rec.InputCanonical), &in) == nil {
				inputs[rec.Result.CommandID] = strings.TrimSpace(in.Title)
			}
		}
	}
	changes := []change{}
	for _, a := range st.Audit {
		if title, ok := inputs[a.EntityID]; ok && a.EntityType == "command" {
			changes = append(changes, change{a.EntityID, a.At, a.RunID, a.ActorID, title})
		}
	}
	afterRun := []after{}
	title := f.CreatedTitle
	for _, r := range runs {
		for _, c := range changes {
			if c.RunID != nil && *c.RunID == r.ID {
				title = c.Title
			}
		}
		afterRun = append(afterRun, after{r.ID, title})
	}
	current := ""
	if t != nil {
		current = t.Title
	}
	return map[string]any{"created": f.CreatedTitle, "changes": changes, "afterRun": afterRun, "current": current}
}

// chatView is the agent-chat part of the composite JSON (for the persistent chat
// fixtures: assertions inspect all company runs, because ordinary issue lists exclude
// the source conversation): the agent, the conversation (every message, generation and
// handoff), every actor's id and name, every task with its parent, conversation and
// assignee, every plan document of a task a handoff created, and every run of the
// company with its task, status, wake and opening time. Nil for a case without a
// conversation.
func chatView(st *controlplane.State, f *Fixtures) map[string]any {
	cv := controlplane.ConversationOf(*st, f.ConversationID)
	if f.ConversationID == "" || cv == nil {
		return nil
	}
	type actor struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	type task struct {
		ID              string  `json:"id"`
		ParentID        *string `json:"parentId"`
		ConversationID  *string `json:"conversationId"`
		AssigneeActorID *string `json:"assigneeActorId"`
	}
	type run struct {
		viewRun
		WakePayload json.RawMessage `json:"wakePayload"`
		OpenedAt    string          `json:"openedAt"`
	}
	handed := map[string]bool{}
	for _, h := range cv.Handoffs {
		handed[h.TaskID] = true
	}
	actors, tasks, runs, docs := []actor{}, []task{}, []run{}, []*controlplane.Document{}
	for _, a := range st.Actors {
		actors = append(actors, actor{a.ID, a.Name})
	}
	for _, t := range st.Tasks {
		tasks = append(tasks, task{t.ID, t.ParentID, t.ConversationID, t.AssigneeActorID})
	}
	for _, d := range st.Documents {
		if handed[d.TaskID] {
			docs = append(docs, d)
		}
	}
	for _, r := range st.Runs {
		runs = append(runs, run{viewRunOf(r), r.Wake.Payload, r.OpenedAt})
	}
	return map[string]any{"agentId": f.AgentID, "conversation": cv, "actors": actors, "tasks": tasks, "documents": docs, "runs": runs}
}

// viewRun is what the chat and company views say first of a run: its id, actor, task,
// status and wake reason (each view adds its fields after them).
type viewRun struct {
	ID         string                  `json:"id"`
	ActorID    string                  `json:"actorId"`
	TaskID     string                  `json:"taskId"`
	Status     controlplane.RunStatus  `json:"status"`
	WakeReason controlplane.WakeReason `json:"wakeReason"`
}

func viewRunOf(r *controlplane.Run) viewRun {
	return viewRun{r.ID, r.ActorID, r.TaskID, r.Status, r.Wake.Reason}
}

// companyView is the company-wide part of the composite JSON (for the direct blocker
// fixtures: company-wide evidence includes any unexpected manager run): the agents the
// fixtures created (agentId, managerId: "" for none), every actor, every task with its
// assignee and parent, and every run of the company with its actor, task, status, wake
// reason and opening time.
func companyView(st *controlplane.State, f *Fixtures) map[string]any {
	type actor struct {
		ID   string `json:"id"`
		Role string `json:"role"`
	}
	type task struct {
		ID              string  `json:"id"`
		Title           string  `json:"title"`
		AssigneeActorID *string `json:"assigneeActorId"`
		ParentID        *string `json:"parentId"`
	}
	type run struct {
		viewRun
		OpenedAt string `json:"openedAt"`
	}
	actors, tasks, runs := []actor{}, []task{}, []run{}
	for _, a := range st.Actors {
		actors = append(actors, actor{a.ID, a.Role})
	}
	for _, t := range st.Tasks {
		tasks = append(tasks, task{t.ID, t.Title, t.AssigneeActorID, t.ParentID})
	}
	for _, r := range st.Runs {
		runs = append(runs, run{viewRunOf(r), r.OpenedAt})
	}
	return map[string]any{"agentId": f.AgentID, "managerId": f.ManagerID, "actors": actors, "tasks": tasks, "runs": runs}
}

// terminationAndUsage returns the last run's termination summary and the usage of the
// runs (one run's usage, or {"runs": [...]} for several); nil when none.
func terminationAndUsage(recs []api.HeartbeatRun) (json.RawMessage, any) {
	var term json.RawMessage
	var usageRuns []map[string]any
	for _, r := range recs {
		if r.Termination == nil {
			continue
		}
		if b, err := json.Marshal(r.Termination); err == nil {
			term = b
		}
		if len(r.Usage) > 0 && string(r.Usage) != "null" {
			var u any
			if json.Unmarshal(r.Usage, &u) == nil {
				usageRuns = append(usageRuns, map[string]any{"runId": r.RunID, "usage": u})
			}
		}
	}
	switch len(usageRuns) {
	case 0:
		return term, nil
	case 1:
		return term, usageRuns[0]["usage"]
	}
	runs := make([]any, len(usageRuns))
	for i, u := range usageRuns {
		runs[i] = u
	}
	return term, map[string]any{"runs": runs}
}

// turnTimings are the timings of each turn whose run exists: when the human submitted
// it, when its process started and the run finished (from the heartbeat record, wall
// clock), and the latencies derived from them.
func turnTimings(runs []*controlplane.Run, recs []api.HeartbeatRun, submitted []time.Time) []result.TurnTiming {
	var out []result.TurnTiming
	for n := 1; n <= len(runs) && n <= len(submitted); n++ {
		run, sub := runs[n-1], submitted[n-1]
		tt := result.TurnTiming{Turn: n, RunID: run.ID, LeaseAcquisitionOutcome: "unknown", SubmittedAt: sub.UTC().Format(time.RFC3339Nano)}
		for _, r := range recs {
			if r.RunID != run.ID {
				continue
			}
			start, okS := parseRFC3339(r.ProcessStartedAt, r.OpenedAt)
			end, okE := parseRFC3339(r.FinishedAt, r.ProcessEndedAt)
			if okS {
				tt.RunStartedAt = ptr(start.UTC().Format(time.RFC3339Nano))
				tt.SchedulerLatencyMs = ptr(max(0, start.Sub(sub).Milliseconds()))
			}
			if okE {
				tt.RunFinishedAt = ptr(end.UTC().Format(time.RFC3339Nano))
				tt.ResponseLatencyMs = ptr(max(0, end.Sub(sub).Milliseconds()))
			}
			if okS && okE {
				tt.RunDurationMs = ptr(max(0, end.Sub(start).Milliseconds()))
			}
		}
		out = append(out, tt)
	}
	return out
}

func parseRFC3339(vs ...string) (time.Time, bool) {
	for _, s := range vs {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// writeJSON writes v as indented JSON into the attempt's evidence through the guard
// (agentproof's own content). A file that cannot be encoded or written is simply
// missing (a required one makes the attempt inconclusive).
func writeJSON(ev *campaign.Evidence, secrets *redact.Set, rel string, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return
	}
	ev.Write(secrets, rel, append(b, '\n'), true)
}
