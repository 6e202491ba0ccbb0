package heartbeat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/worker"
	"github.com/agentproof/agentproof/workspace/watch"
)

// Session runs (docs/acp.md "In the heartbeat runner", docs/pi.md): the run of a
// session driver (acp:<agent>, rpc:pi; agent.SessionDriver over package agent/session)
// is one prompt turn of a session. Lifecycle per_turn: the runner starts the agent's
// session for the run and closes it when the turn ends; warm (warm.go): one session
// serves every run of the agent, each run binding it for its turn. The run's prompt is
// one turn; every permission request of the agent becomes a permission card on the
// board (boardDecider), every native question a question interaction (boardQuestions);
// a protocol that can steer gets the Steer button and the human's comments delivered
// into the running turn (steer.go). Stop cancels the run's context: the layer sends
// the protocol's native cancel and answers what is pending "cancelled", and the turn
// must then end with the protocol's cancelled stop reason. The workspace watcher runs
// from before the session's start (its first prompt) until the process exited
// (per_turn) or the turn ended (warm), for every protocol alike. The turn's facts are
// the record's acp or pi field (api.SessionTurn); its share of the session log
// (<protocol>-turn.jsonl), the turn summary (<protocol>-turn.json), the agent's stderr
// and the workspace watch are the run's evidence, all through the secret guard
// (finish).

// WorkspaceWatchFile is the workspace watcher's whole record in a run's record
// directory (package workspace/watch).
const WorkspaceWatchFile = "workspace-watch.json"

// sessionRun is what a session run needs before its session starts: the driver, the
// run's environment, the secrets to redact, the sandbox launch (nil on the host).
type sessionRun struct {
	driver  agent.SessionDriver
	proto   session.Protocol
	env     agent.RunEnv
	secrets *redact.Set
	leased  *leasedSession
	place   session.LaunchFunc
	warm    bool
}

// executeSession carries a session driver's run from its open run to its completion.
// It is called with the run's lock held and unlocks it while the session runs.
func (r *Runner) executeSession(ctx, runCtx context.Context, j job, rc controlplane.RunContext, rec *Record, lock *sync.Mutex) {
	sr, err := r.prepareSession(ctx, j, rec)
	if err != nil {
		r.finish(j.c, rec, worker.Outcome{SpawnError: err}, agent.Report{Summary: "not started: " + err.Error(), RunStatus: controlplane.RunFailed}, nil, nil)
		lock.Unlock()
		return
	}
	rec.State = api.RunLaunching
	r.remember(rec)
	lock.Unlock() // Stop may now reserve its intent and cancel runCtx

	o := r.runTurn(runCtx, j, rc, sr)
	r.closeRunPermissions(j.runID, "the turn ended before the human answered")
	lock.Lock()
	defer lock.Unlock()
	r.recordTurn(j, rec, sr, o)
}

// prepareSession resolves the run's environment and its session driver. Errors: the
// environment's, the driver configuration's, a sandbox for a driver whose agent
// cannot run in one.
func (r *Runner) prepareSession(ctx context.Context, j job, rec *Record) (sessionRun, error) {
	var dc api.DriverConfig
	if j.cfg.DriverConfig != nil {
		dc = *j.cfg.DriverConfig
	}
	env, secrets, lease, err := r.prepareEnv(ctx, j, rec)
	if err != nil {
		return sessionRun{}, err
	}
	d, err := agent.NewSession(j.cfg.Driver, dc)
	if err != nil {
		return sessionRun{}, err
	}
	if lease != nil && !d.Confinable() {
		// Nothing launches this agent inside a sandbox lease: it is refused rather than
		// run unconfined.
		return sessionRun{}, fmt.Errorf("driver %s runs in a local environment only; environment %s is a sandbox", j.cfg.Driver, j.env.ID)
	}
	leased, place := sessionLauncher(lease, j, env.StateDir)
	return sessionRun{driver: d, proto: d.Protocol(), env: env, secrets: secrets, leased: leased, place: place, warm: j.cfg.LifecycleMode.Warm()}, nil
}

// turnOutcome is what one session run observed: its session (nil when it did not
// start) and why it did not, whether a warm session was reused, the turn's result and
// error, the process's exit (none while a warm session stays open), the launch facts,
// the workspace watch, the times, and the secrets and lease account that apply.
type turnOutcome struct {
	sess      *session.Session
	startErr  error
	reused    bool
	res       session.TurnResult
	turnErr   error
	exit      session.ProcessExit
	open      bool
	facts     *api.LaunchFacts
	watched   *watch.Record
	watchErr  error
	startedAt time.Time
	endedAt   time.Time
	secrets   *redact.Set
	leased    *leasedSession
}

// runTurn starts (or binds) j's session, sends the run's prompt as one turn and
// retires or unbinds the session, with the workspace watched throughout.
func (r *Runner) runTurn(runCtx context.Context, j job, rc controlplane.RunContext, sr sessionRun) turnOutcome {
	o := turnOutcome{startedAt: r.cfg.Now(), secrets: sr.secrets, leased: sr.leased}
	// The one place the workspace watcher starts and stops for a session run.
	watcher, watchErr := watch.Start(sr.env.Workspace)
	r.watchRun(j.runID, watcher)
	var ws *warmSession
	if sr.warm {
		ws, o.reused, o.startErr = r.warmFor(runCtx, j, sr)
		if o.startErr == nil {
			o.sess, o.secrets, o.leased = ws.sess, ws.secrets, ws.leased
		}
	} else {
		o.sess, o.startErr = sr.driver.Start(runCtx, r.sessionEnv(j, sr, boardDecider{r: r, j: j, run: j.runID}, r.questions(j, sr.proto)))
	}
	if o.startErr == nil {
		var observed func()
		o.facts, observed = r.sessionFacts(j, o.startedAt, o.sess, o.secrets)
		o.res, o.turnErr = r.prompt(runCtx, j, o.sess, session.Turn{RunID: j.runID, RunToken: sr.env.RunToken, Text: agent.Prompt(rc)})
		if sr.warm {
			o.exit, o.open = r.warmAfterTurn(ws, j)
		} else {
			o.exit = o.sess.Close()
		}
		observed()
	} else if se := (*session.StartError)(nil); errors.As(o.startErr, &se) && se.Exit != nil {
		o.exit = *se.Exit
	}
	if watcher != nil {
		r.watchRun(j.runID, nil)
		wr := watcher.Stop()
		o.watched = &wr
	}
	o.watchErr, o.endedAt = watchErr, r.cfg.Now()
	return o
}

// watchRun makes w the workspace watcher of run's turn (nil: the turn is over), which
// syncWatch syncs.
func (r *Runner) watchRun(run string, w *watch.Watcher) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	if w == nil {
		delete(r.watching, run)
		return
	}
	r.watching[run] = w
}

// syncWatch records what run's workspace watcher has queued (watch.Watcher.Sync), so
// every mutation made before now is stamped before it: called when the agent asks a
// permission, before the question is opened.
func (r *Runner) syncWatch(run string) {
	r.wmu.Lock()
	w := r.watching[run]
	r.wmu.Unlock()
	if w != nil {
		w.Sync()
	}
}

// sessionEnv is the agent.SessionEnv of j's session with its deciders.
func (r *Runner) sessionEnv(j job, sr sessionRun, perms session.PermissionDecider, questions session.QuestionDecider) agent.SessionEnv {
	var markers []string
	if r.cfg.ProcessMarker != "" {
		markers = []string{r.cfg.ProcessMarker}
	}
	return agent.SessionEnv{Run: sr.env, Permissions: perms, Questions: questions, Tools: r.cfg.PiTools, Redact: sr.secrets, Now: r.cfg.Now,
		ExtraMarkers: markers, Warm: sr.warm, Place: sr.place}
}

// questions is the question decider of j's run: its native questions become question
// interactions on the board.
func (r *Runner) questions(j job, proto session.Protocol) boardQuestions {
	return boardQuestions{c: j.c, run: j.runID, task: j.task.ID, poll: PiQuestionPoll, source: questionSource(proto)}
}

// sessionFacts records the launch facts of j's session (the process started at
// startedAt): the board sees the process identity at once (in memory; the durable
// record gets the whole facts when the run ends). observed completes the facts (the
// binary's digest and version, bounded) and must be called before the run's lock is
// taken.
func (r *Runner) sessionFacts(j job, startedAt time.Time, sess *session.Session, secrets *redact.Set) (*api.LaunchFacts, func()) {
	facts, observed, id, identified := r.sessionLaunchFacts(j, startedAt, worker.Spec{Path: sess.Path, Args: sess.Args}, sess.Identity, secrets)
	if identified {
		r.mu.Lock()
		if cur := r.runs[j.runID]; cur != nil && cur.Launch == nil {
			cur.Launch = &api.LaunchFacts{PID: id.PID, ProcessStartTicks: id.StartTime}
		}
		r.mu.Unlock()
	}
	return facts, observed
}

// prompt sends turn t to sess; a session that can steer gets the run's live turn
// (the Steer button, the human's comments as follow-ups) while the turn runs.
func (r *Runner) prompt(runCtx context.Context, j job, sess *session.Session, t session.Turn) (session.TurnResult, error) {
	if !sess.Steerable() {
		return sess.Prompt(runCtx, t)
	}
	stop := r.goLive(runCtx, j, sess)
	defer stop()
	return sess.Prompt(runCtx, t)
}

// recordTurn writes what the run observed into rec and finishes the run. The caller
// holds the run's lock.
func (r *Runner) recordTurn(j job, rec *Record, sr sessionRun, o turnOutcome) {
	r.joinStop(rec)
	out, report := sessionReport(sr.proto, o, o.endedAt.Sub(o.startedAt))
	if out.Started {
		rec.ProcessStartedAt, rec.ProcessEndedAt = stamp(o.startedAt), stamp(o.endedAt)
		rec.Launch = o.facts
	}
	if o.startErr == nil {
		rec.WorkspaceWatch = watchSummary(o.watched, o.watchErr, o.secrets.RedactText)
		if o.watched != nil {
			b, _ := json.MarshalIndent(o.watched, "", "  ")
			report.Transcript = append(report.Transcript, agent.Evidence{Name: WorkspaceWatchFile, MediaType: "application/json", Body: b})
		}
		t := turnFacts(o.sess, o.res, o.exit, o.secrets.RedactText)
		t.Lifecycle, t.Reused = api.LifecyclePerTurn, o.reused
		if sr.warm {
			t.Lifecycle = api.LifecycleWarm
		}
		if o.open {
			t.Exit = ""
		}
		setSessionTurn(rec, j.cfg.Driver.Kind, t)
		report = withPresentation(report, sr.env.StateDir, rec.RunID)
	}
	// The lease provider's account (limits hit, problems, facts) once the process ended:
	// per_turn now, warm when the session was retired after this turn.
	r.finish(j.c, rec, out, report, o.secrets, o.leased.account())
}

// setSessionTurn sets the session turn of a run of driver kind: its acp, pi (rpc) or
// app field.
func setSessionTurn(h *api.HeartbeatRun, kind driver.Kind, t *api.SessionTurn) {
	switch kind {
	case driver.KindRPC:
		h.Pi = t
	case driver.KindApp:
		h.App = t
	default:
		h.ACP = t
	}
}

// watchSummary is a run's api.WorkspaceWatch from the watcher's record (paths
// redacted); a watcher that did not start is an incomplete watch naming why.
func watchSummary(wr *watch.Record, startErr error, redact func(string) string) *api.WorkspaceWatch {
	if wr == nil {
		why := "the workspace watcher did not start"
		if startErr != nil {
			why += ": " + redact(startErr.Error())
		}
		return &api.WorkspaceWatch{Events: []api.WorkspaceEvent{}, Problems: []string{why}}
	}
	w := &api.WorkspaceWatch{Complete: wr.Complete(), Events: []api.WorkspaceEvent{}, More: wr.Dropped}
	for i, e := range wr.Events {
		if i >= api.MaxWatchEvents {
			w.More += len(wr.Events) - i
			break
		}
		w.Events = append(w.Events, api.WorkspaceEvent{Op: string(e.Op), Path: redact(e.Path), Dir: e.Dir, At: e.At})
	}
	if wr.Overflow {
		w.Problems = append(w.Problems, "the kernel's event queue overflowed: mutations were lost")
	}
	for _, p := range wr.Problems {
		w.Problems = append(w.Problems, redact(p))
	}
	return w
}

// withPresentation answers report with the run's presentation record (the comment the
// agent presented as its reply, read from stateDir) or, when the record is unreadable,
// its summary saying so; a run without one leaves report as it is.
func withPresentation(report agent.Report, stateDir, runID string) agent.Report {
	p, err := agent.ReadPresentation(stateDir, runID)
	switch {
	case err != nil:
		report.Summary += "; presentation record unreadable: " + err.Error()
	case p != nil:
		report.Presentation = &agent.Presentation{CommentID: p.CommentID, Text: p.Text}
	}
	return report
}
