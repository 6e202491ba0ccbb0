package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/report"
	"github.com/agentproof/agentproof/workspace"
)

// turnDeadlineError is a missed per-turn deadline (turn is 1-based).
type turnDeadlineError struct{ turn int }

func (e *turnDeadlineError) Error() string { return fmt.Sprintf("turn %d deadline missed", e.turn) }

func (e *turnDeadlineError) Unwrap() error { return errTurnDeadline }

// view is one look at the attempt through the API: the company state, the task's runs
// in order and the heartbeat runner's records.
type view struct {
	st      controlplane.State
	task    *controlplane.Task
	runs    []*controlplane.Run
	records []api.HeartbeatRun
}

// look reads the state and the heartbeat records.
func (a *attempt) look(ctx context.Context) (*view, error) {
	st, err := a.co.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the company state: %w", err)
	}
	recs, err := a.co.HeartbeatRuns(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the heartbeat runs: %w", err)
	}
	v := &view{st: st, records: recs, task: findTask(&st, a.facts.IssueID)}
	for _, r := range st.Runs {
		if r.TaskID == a.facts.IssueID {
			v.runs = append(v.runs, r)
		}
	}
	return v, nil
}

// settled reports whether run n (1-based) exists, is terminal and every heartbeat
// record is done (its process ended), so the workspace and the state are stable.
func (v *view) settled(n int) bool {
	if len(v.runs) < n || v.runs[n-1].Status == "running" {
		return false
	}
	for _, r := range v.records {
		if r.State == api.RunOpening || r.State == api.RunLaunching {
			return false
		}
	}
	return true
}

// refused returns the reason of a wake the runner could not open, or "".
func (v *view) refused() string {
	for _, r := range v.records {
		if r.State == api.RunNotOpened {
			return fmt.Sprintf("the runner did not open run %s: %s", r.RunID, r.Reason)
		}
	}
	return ""
}

// waitTurn polls until run n is settled, within the turn deadline (when the case
// declares one). A missed turn deadline is a *turnDeadlineError; an attempt deadline
// or a cancellation returns the context's error.
func (a *attempt) waitTurn(ctx context.Context, n int) (*view, error) {
	if a.plan.TurnTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, a.plan.TurnTimeout, &turnDeadlineError{turn: n})
		defer cancel()
	}
	poll := a.x.PollInterval
	if poll <= 0 {
		poll = 25 * time.Millisecond
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		v, err := a.look(ctx)
		if err == nil {
			if v.settled(n) {
				a.note("run %d settled: %s %s", n, v.runs[n-1].ID, v.runs[n-1].Status)
				a.noteTurn(n, v)
				return v, nil
			}
			if why := v.refused(); why != "" {
				return v, errors.New(why)
			}
		}
		select {
		case <-ctx.Done():
			if cause := context.Cause(ctx); errors.Is(cause, errTurnDeadline) {
				return nil, cause
			}
			if err != nil && ctx.Err() == nil {
				return nil, err
			}
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// noteTurn records turn n's timing from its heartbeat record (wall-clock times).
func (a *attempt) noteTurn(n int, v *view) {
	if len(a.facts.TurnTimings) >= n || n > len(v.runs) {
		return
	}
	run := v.runs[n-1]
	tt := report.TurnTiming{Turn: n, RunID: run.ID, LeaseAcquisitionOutcome: "unknown"}
	sub := time.Now()
	if n-1 < len(a.submitted) {
		sub = a.submitted[n-1]
	}
	tt.SubmittedAt = sub.UTC().Format(time.RFC3339Nano)
	for _, r := range v.records {
		if r.RunID != run.ID {
			continue
		}
		start, okS := parseRFC3339(r.ProcessStartedAt, r.OpenedAt)
		end, okE := parseRFC3339(r.FinishedAt, r.ProcessEndedAt)
		if okS {
			s := start.UTC().Format(time.RFC3339Nano)
			tt.RunStartedAt = &s
			tt.SchedulerLatencyMs = ptr(max(0, start.Sub(sub).Milliseconds()))
		}
		if okE {
			e := end.UTC().Format(time.RFC3339Nano)
			tt.RunFinishedAt = &e
			tt.ResponseLatencyMs = ptr(max(0, end.Sub(sub).Milliseconds()))
			if okS {
				tt.RunDurationMs = ptr(max(0, end.Sub(start).Milliseconds()))
			}
		}
	}
	for len(a.facts.TurnTimings) < n-1 {
		a.facts.TurnTimings = append(a.facts.TurnTimings, report.TurnTiming{Turn: len(a.facts.TurnTimings) + 1, SubmittedAt: tt.SubmittedAt, LeaseAcquisitionOutcome: "unknown"})
	}
	a.facts.TurnTimings = append(a.facts.TurnTimings, tt)
}

func parseRFC3339(vs ...string) (time.Time, bool) {
	for _, s := range vs {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// pending returns the task's pending interaction of kind, or nil.
func (v *view) pending(task, kind string) *controlplane.Interaction {
	for _, in := range v.st.Interactions {
		if in.TaskID == task && in.Status == "pending" && (kind == "" || in.Kind == kind) {
			return in
		}
	}
	return nil
}

// flow plays the case's flow as the human, through the board API only (issue 9
// "Flows"). It returns a *turnDeadlineError for a missed turn deadline, the context's
// error for an attempt deadline or a cancellation, and otherwise the first harness
// error or, at the end, the flow's contract violations (the agent broke the flow:
// candidate_failure).
func (a *attempt) flow(ctx context.Context, _ *Fixtures) error {
	c := a.plan.Cell.Case
	rc := a.plan.Case
	task := a.facts.IssueID
	var problems []string
	v, err := a.waitTurn(ctx, 1)
	if err != nil {
		return err
	}
	switch c.Flow {
	case "single_turn", "process_exit":
	case "question_resume_completion":
		q := v.pending(task, "questions")
		if q == nil {
			problems = append(problems, "no pending question after run 1")
			break
		}
		if c.RestartServerBeforeAnswer {
			a.note("restarting the server before answering question %s", q.ID)
			if err := a.restartServer(ctx); err != nil {
				return err
			}
		}
		result, err := answerFor(q, rc.QuestionAnswer.OptionLabel)
		if err != nil {
			problems = append(problems, err.Error())
			break
		}
		a.submitted = append(a.submitted, time.Now())
		a.note("answering question %s with %q", q.ID, rc.QuestionAnswer.OptionLabel)
		if _, err := a.co.ResolveInteraction(ctx, q.ID, api.ResolveInteractionRequest{Outcome: "answered", Result: result}); err != nil {
			return fmt.Errorf("answering question %s: %w", q.ID, err)
		}
		if v, err = a.waitTurn(ctx, 2); err != nil {
			return err
		}
		if p := v.pending(task, ""); p != nil {
			problems = append(problems, fmt.Sprintf("interaction %s is still pending at the end", p.ID))
		}
		for i, r := range v.runs {
			if r.Status != "succeeded" {
				problems = append(problems, fmt.Sprintf("run %d ended %s, not succeeded", i+1, r.Status))
			}
		}
	case "plan_revision_acceptance":
		for turn, outcome := range []string{"rejected", "accepted"} {
			q := v.pending(task, "confirmation")
			if q == nil {
				problems = append(problems, fmt.Sprintf("no plan confirmation pending after run %d", turn+1))
				break
			}
			var result json.RawMessage
			if outcome == "rejected" {
				result, _ = json.Marshal(map[string]string{"note": rc.RevisionRequest})
			} else {
				result = json.RawMessage(`{}`)
			}
			a.submitted = append(a.submitted, time.Now())
			a.note("resolving plan confirmation %s as %s", q.ID, outcome)
			if _, err := a.co.ResolveInteraction(ctx, q.ID, api.ResolveInteractionRequest{Outcome: outcome, Result: result}); err != nil {
				return fmt.Errorf("resolving plan confirmation %s as %s: %w", q.ID, outcome, err)
			}
			if v, err = a.waitTurn(ctx, turn+2); err != nil {
				return err
			}
		}
	case "plan_approval_completion":
		var ap *controlplane.Approval
		for _, x := range v.st.Approvals {
			if x.Status == "pending" && len(x.TaskIDs) > 0 && x.TaskIDs[0] == task {
				ap = x
				break
			}
		}
		if ap == nil {
			problems = append(problems, "no pending plan approval after run 1")
			break
		}
		rev := ""
		for _, d := range v.st.Documents {
			if d.TaskID == task && d.Key == "plan" {
				rev = d.LatestRevisionID
			}
		}
		a.submitted = append(a.submitted, time.Now())
		note := "Approved plan revision " + rev
		a.note("approving %s (plan revision %s)", ap.ID, rev)
		if _, err := a.co.DecideApproval(ctx, ap.ID, api.DecideApprovalRequest{Decision: "approved", Note: note}); err != nil {
			return fmt.Errorf("approving %s: %w", ap.ID, err)
		}
		if _, err = a.waitTurn(ctx, 2); err != nil {
			return err
		}
	case "warm_three_turn":
		for turn := 1; turn <= len(rc.Followups)+1; turn++ {
			if msg := a.checkWarmFile(turn); msg != "" {
				problems = append(problems, msg)
			}
			if turn > len(rc.Followups) {
				break
			}
			if v.task == nil || v.task.Status != "in_review" {
				problems = append(problems, fmt.Sprintf("turn %d was not submitted for review", turn))
				break
			}
			a.submitted = append(a.submitted, time.Now())
			a.note("posting follow-up %d", turn)
			if _, err := a.co.Comment(ctx, task, rc.Followups[turn-1]); err != nil {
				return fmt.Errorf("posting follow-up %d: %w", turn, err)
			}
			if v, err = a.waitTurn(ctx, turn+1); err != nil {
				return err
			}
		}
	default:
		return &ClassError{Class: PermanentInfrastructure, Err: fmt.Errorf("flow %q is not supported by this executor", c.Flow)}
	}
	if v2, err := a.look(ctx); err == nil {
		v = v2
	}
	if want := c.ExpectedRunCount; want > 0 && c.MinimumExpectedRunCount == nil && len(v.runs) != want && len(problems) == 0 {
		problems = append(problems, fmt.Sprintf("expected %d runs, observed %d", want, len(v.runs)))
	}
	if len(problems) > 0 {
		return &ClassError{Class: CandidateFailure, Err: errors.New("flow: " + strings.Join(problems, "; "))}
	}
	return nil
}

// checkWarmFile checks the warm case's workspace file after turn n: it must hold
// exactly the first n lines of the final expected content (T1…Tn).
func (a *attempt) checkWarmFile(n int) string {
	rc := a.plan.Case
	if rc.WorkspaceFile == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(a.ws, filepath.FromSlash(rc.WorkspaceFile)))
	if err != nil {
		return fmt.Sprintf("after turn %d the workspace file %s is missing", n, rc.WorkspaceFile)
	}
	var want strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&want, "T%d-%s\n", i, rc.Nonce)
	}
	if string(b) != want.String() {
		return fmt.Sprintf("after turn %d the workspace file %s does not hold lines T1…T%d", n, rc.WorkspaceFile, n)
	}
	return ""
}

// answerFor builds the answer of a structured question: the question offering an
// option labelled label, answered with that option.
func answerFor(q *controlplane.Interaction, label string) (json.RawMessage, error) {
	var p struct {
		Questions []struct {
			ID      string `json:"id"`
			Options []struct {
				ID    string `json:"id"`
				Label string `json:"label"`
			} `json:"options"`
		} `json:"questions"`
	}
	if err := json.Unmarshal(q.Payload, &p); err != nil {
		return nil, fmt.Errorf("question %s has no readable payload", q.ID)
	}
	for _, qu := range p.Questions {
		for _, o := range qu.Options {
			if o.Label == label {
				return json.Marshal(map[string]any{"answers": []any{map[string]string{"questionId": qu.ID, "optionId": o.ID, "optionLabel": o.Label}}})
			}
		}
	}
	return nil, fmt.Errorf("question %s offers no option labelled %q", q.ID, label)
}

// restartServer stops the server child and starts a new one on the same home (the
// restartServerBeforeQuestionAnswer variant), reconnecting the client.
func (a *attempt) restartServer(ctx context.Context) error {
	if err := a.srv.stop(); err != nil {
		return fmt.Errorf("server restart failed: stopping: %w", err)
	}
	a.writeBounded("logs/serve-before-restart.stderr.log", a.srv.stderr.Bytes(), true)
	srv, err := startServe(ctx, a.x.Executable, a.home, a.root)
	if err != nil {
		a.srv = nil
		return fmt.Errorf("server restart failed: %w", err)
	}
	a.srv = srv
	a.note("server restarted on %s", srv.addr)
	id := a.co.ID()
	a.cl = clientFor(srv)
	a.co = a.cl.Company(id)
	return nil
}

// observe builds the observation from the API (state, heartbeat records) and the
// workspace, and writes snapshots/api-state.json, snapshots/heartbeat-runs.json and
// workspace-manifest.json (spec §5 "Message source"). A nil observation means nothing
// could be observed; the error says what evidence is missing.
func (a *attempt) observe(ctx context.Context, _ *Fixtures) (*match.Observation, error) {
	if a.co == nil || a.facts.IssueID == "" {
		return nil, nil
	}
	v, err := a.look(ctx)
	if err != nil {
		return nil, err
	}
	a.writeJSON("snapshots/api-state.json", v.st)
	a.writeJSON("snapshots/heartbeat-runs.json", v.records)
	cell := a.plan.Cell
	obs := &match.Observation{Secrets: a.secrets.Values(), RuntimeMode: cell.Profile.Generation}
	if e, ok := a.fx.Record("environment"); ok && e.IDs["environment"] != "" {
		obs.Environment = cell.Environment.ID
	}
	if v.task != nil {
		obs.IssueStatus = v.task.Status
	}
	for _, run := range v.runs {
		a.facts.RunIDs = append(a.facts.RunIDs, run.ID)
		obs.RunStatus = run.Status
		obs.Turns = append(obs.Turns, v.st.RunMessage(run))
	}
	obs.HasMessage = len(v.runs) > 0
	obs.Message = strings.Join(obs.Turns, "\n")
	var collect []string
	var usageRuns []any
	for _, r := range v.records {
		if r.Termination == nil {
			continue
		}
		if b, err := json.Marshal(r.Termination); err == nil {
			a.facts.Termination = b
		}
		if len(r.Usage) > 0 && string(r.Usage) != "null" {
			var u any
			if json.Unmarshal(r.Usage, &u) == nil {
				usageRuns = append(usageRuns, map[string]any{"runId": r.RunID, "usage": u})
			}
		}
		if _, isCLI := IsCLIDriver(r.Driver); isCLI && r.Status == "failed" && r.Termination.Started && r.Termination.ExitCode != nil && *r.Termination.ExitCode != 0 {
			a.cliFailures = append(a.cliFailures, fmt.Sprintf("run %s failed: %s", r.RunID, r.Termination.Summary))
		}
		if !r.Termination.Started {
			// Not the candidate's doing: the runner could not launch the agent
			// (configuration, driver not built, spawn failure).
			collect = append(collect, fmt.Sprintf("the agent process of run %s was not started: %s", r.RunID, r.Termination.Summary))
		}
		if r.Termination.CollectorError != "" {
			collect = append(collect, r.Termination.CollectorError)
		}
		if n := r.Termination.SecretsRedacted; n > 0 {
			a.printed = append(a.printed, fmt.Sprintf("the agent of run %s printed a secret (the runner redacted it from %d piece(s) of its output)", r.RunID, n))
		}
		if r.Termination.OutputExceeded {
			collect = append(collect, fmt.Sprintf("run %s exceeded its output bound", r.RunID))
		}
		if r.Termination.TimedOut && a.processDeadline == "" {
			a.processDeadline = fmt.Sprintf("run %s process", r.RunID)
		}
	}
	switch len(usageRuns) {
	case 0:
	case 1:
		a.facts.Usage = usageRuns[0].(map[string]any)["usage"]
	default:
		a.facts.Usage = map[string]any{"runs": usageRuns} // spec §8.1: multi-run usage
	}
	for _, ar := range v.st.Artifacts {
		if ar.TaskID == a.facts.IssueID {
			obs.Artifacts = append(obs.Artifacts, match.Artifact{Name: ar.Filename, MimeType: ar.ContentType, SHA256: ar.SHA256, ByteSize: ar.ByteSize})
		}
	}
	obs.HasArtifacts = true
	var docs []*controlplane.Document
	var inters []*controlplane.Interaction
	for _, d := range v.st.Documents {
		if d.TaskID == a.facts.IssueID {
			docs = append(docs, d)
		}
	}
	for _, in := range v.st.Interactions {
		if in.TaskID == a.facts.IssueID {
			inters = append(inters, in)
		}
	}
	if b, err := json.Marshal(map[string]any{"issue": v.task, "runs": v.runs, "interactions": inters, "documents": docs}); err == nil {
		obs.JSON = b
	}
	snap, werr := workspace.Take(ctx, a.ws, workspace.Limits{})
	if werr == nil {
		obs.Files, obs.HasWorkspaceSnapshot = snap.Files, true
		a.writeJSON("workspace-manifest.json", snap.Document())
	} else {
		collect = append(collect, "workspace snapshot: "+werr.Error())
	}
	if len(collect) > 0 {
		return obs, errors.New(strings.Join(collect, "; "))
	}
	return obs, nil
}
