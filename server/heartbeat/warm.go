package heartbeat

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/redact"
)

// Warm lifecycle (docs/acp.md "Warm lifecycle", docs/pi.md): an agent whose
// adapterConfig says lifecycleMode warm keeps one session — one agent process — for
// all its runs, whatever its protocol. The first run starts it (agent.SessionEnv.Warm:
// an agent's MCP server reads the current run from the session's run binding file
// instead of carrying one run's token); every run binds the session to itself
// (Session.Bind: its id and token in the binding file and the log's secrets; its board
// deciders for permissions and questions), sends its prompt as one turn, and unbinds
// it when the turn ends. A session whose process exited,
// whose turn broke it, or whose agent's adapterConfig changed is retired and the next
// run starts a fresh one. Shutdown retires every warm session after the last run
// (Close: stdin closed, SIGTERM, SIGKILL, descendants and the marker swept) and
// records its exit in WarmDir.

// WarmDir is the directory (below the runner's records directory) of the retired warm
// sessions' records: <company>-<actor>-<session index>.json (WarmRecord) and the
// process's redacted stderr beside it (.stderr.log).
const WarmDir = "warm"

// WarmRecordSchema is the schema of a WarmRecord.
const WarmRecordSchema = "agentproof.warm-session/v1"

// WarmRecord is what a retired warm session leaves: the agent, the session's index and
// id, the process identity (pid, start time in clock ticks after boot), the runs it
// served in order, why it was retired, and the process's exit (session.ProcessExit:
// exit code or signal, signals sent, descendants killed, escaped processes).
type WarmRecord struct {
	Schema            string              `json:"schema"`
	CompanyID         string              `json:"companyId"`
	ActorID           string              `json:"actorId"`
	SessionIndex      int                 `json:"sessionIndex"`
	SessionID         string              `json:"sessionId"`
	PID               int                 `json:"pid"`
	ProcessStartTicks uint64              `json:"processStartTicks"`
	Runs              []string            `json:"runs"`
	StartedAt         string              `json:"startedAt"`
	RetiredAt         string              `json:"retiredAt"`
	Reason            string              `json:"reason"`
	Exit              session.ProcessExit `json:"exit"`
	// Environment is the sandbox provider's account of the process (limits hit,
	// problems, facts), nil on the host.
	Environment *environment.Settled `json:"environment,omitempty"`
}

// warmSession is one agent's warm session. Its fields are used by one run at a time
// (a company runs one run at a time); the runner's map is guarded by r.mu.
type warmSession struct {
	key       string
	company   string
	actor     string
	config    string // the adapterConfig it was started with
	sess      *session.Session
	decider   *warmDecider
	questions *warmQuestions
	secrets   *redact.Set // every run token it was bound to and the resolved secrets
	runs      []string
	startedAt string
	identity  session.ProcessIdentity
	leased    *leasedSession // the sandbox launch of its process (nil on the host)
}

// bind binds the session to j's run: its deciders answer for the run from now on.
func (ws *warmSession) bind(r *Runner, j job, proto session.Protocol) {
	ws.decider.set(boardDecider{r: r, j: j, run: j.runID}, true)
	ws.questions.set(r.questions(j, proto), true)
}

// unbind detaches the session from the run it served: no decider answers between
// turns (a request or question then is answered cancelled).
func (ws *warmSession) unbind() {
	ws.decider.set(nil, false)
	ws.questions.set(nil, false)
}

// bound is what a warm session's decider answers with: the decider of the run bound
// now, none between turns.
type bound[D any] struct {
	mu  sync.Mutex
	cur D
	ok  bool
}

func (b *bound[D]) set(d D, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cur, b.ok = d, ok
}

func (b *bound[D]) get() (D, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cur, b.ok
}

// warmDecider is the permission decider of a warm session: the board decider of the
// run bound now, none between turns (a request then is answered cancelled).
type warmDecider struct {
	bound[session.PermissionDecider]
}

// Decide hands the request to the bound run's decider.
func (w *warmDecider) Decide(ctx context.Context, req session.PermissionRequest) (session.PermissionDecision, error) {
	if d, ok := w.get(); ok {
		return d.Decide(ctx, req)
	}
	return session.PermissionDecision{Cancelled: true}, nil
}

// warmQuestions is the question decider of a warm session: the board questions of
// the run bound now, none between turns (a question then is answered cancelled).
type warmQuestions struct{ bound[session.QuestionDecider] }

// Answer hands the question to the bound run's decider.
func (w *warmQuestions) Answer(ctx context.Context, req session.QuestionRequest) (session.QuestionAnswer, error) {
	if q, ok := w.get(); ok {
		return q.Answer(ctx, req)
	}
	return session.QuestionAnswer{Cancelled: true}, nil
}

// warmKey is the key of j's agent's warm session: company/agent.
func warmKey(j job) string { return j.company + "/" + j.actor.ID }

// liveWarm answers the running warm session of j's agent when it can serve j's run (its
// adapterConfig unchanged, its process alive), with j's run token and secrets added
// to its secret set; nil otherwise, after retiring the one that cannot serve.
func (r *Runner) liveWarm(j job, env agent.RunEnv) *warmSession {
	r.mu.Lock()
	ws := r.warm[warmKey(j)]
	r.mu.Unlock()
	if ws == nil {
		return nil
	}
	switch {
	case ws.config != string(j.actor.AdapterConfig):
		r.retireWarm(ws, "the agent's adapterConfig changed")
		return nil
	case !ws.sess.Alive():
		r.retireWarm(ws, "its process exited or a turn broke the session")
		return nil
	}
	ws.secrets = ws.secrets.With(env.RunToken)
	for _, name := range slices.Sorted(maps.Keys(env.Secrets)) {
		ws.secrets = ws.secrets.With(env.Secrets[name])
	}
	return ws
}

// warmFor returns the warm session of j's agent bound to j's run: the running one
// (reused), or a new one started for it (its process placed by sr: in the run's
// sandbox lease, or on the host). Errors: the start's (*session.StartError), or a
// binding that could not be written (the session is then retired).
func (r *Runner) warmFor(ctx context.Context, j job, sr sessionRun) (*warmSession, bool, error) {
	if ws := r.liveWarm(j, sr.env); ws != nil {
		if err := ws.sess.Bind(j.runID, sr.env.RunToken); err != nil {
			r.retireWarm(ws, "its run binding could not be written")
			return nil, false, &session.StartError{Protocol: sr.proto.Name, Stage: session.StageLaunch, Err: fmt.Errorf("binding the warm session to run %s: %w", j.runID, err)}
		}
		ws.bind(r, j, sr.proto)
		ws.runs = append(ws.runs, j.runID)
		return ws, true, nil
	}
	ws := &warmSession{key: warmKey(j), company: j.company, actor: j.actor.ID, config: string(j.actor.AdapterConfig), decider: &warmDecider{},
		questions: &warmQuestions{}, secrets: sr.secrets, runs: []string{j.runID}, startedAt: r.now(), leased: sr.leased}
	ws.bind(r, j, sr.proto)
	sess, err := sr.driver.Start(ctx, r.sessionEnv(j, sr, ws.decider, ws.questions))
	if err != nil {
		return nil, false, err
	}
	ws.sess = sess
	ws.identity, _ = sess.Identity()
	r.mu.Lock()
	r.warm[ws.key] = ws
	r.mu.Unlock()
	return ws, false, nil
}

// warmAfterTurn unbinds the warm session after j's turn. A session that can still
// serve a turn stays open (open true); one that cannot is retired now and its exit is
// the run's.
func (r *Runner) warmAfterTurn(ws *warmSession, j job) (exit session.ProcessExit, open bool) {
	ws.unbind()
	bindErr := ws.sess.Bind("", "")
	if ws.sess.Alive() && bindErr == nil {
		return session.ProcessExit{}, true
	}
	reason := "its turn in run " + j.runID + " broke the session or its process exited"
	if bindErr != nil {
		reason = "its run binding could not be cleared after run " + j.runID
	}
	return r.retireWarm(ws, reason), false
}

// retireWarm closes ws (its process and descendants), forgets it and records its exit
// in WarmDir; it returns the exit.
func (r *Runner) retireWarm(ws *warmSession, reason string) session.ProcessExit {
	r.mu.Lock()
	if r.warm[ws.key] == ws {
		delete(r.warm, ws.key)
	}
	r.mu.Unlock()
	ws.unbind()
	exit := ws.sess.Close()
	rec := WarmRecord{Schema: WarmRecordSchema, CompanyID: ws.company, ActorID: ws.actor, SessionIndex: ws.sess.Index,
		SessionID: ws.secrets.RedactText(ws.sess.Info.SessionID), PID: ws.identity.PID, ProcessStartTicks: ws.identity.StartTime,
		Runs: slices.Clone(ws.runs), StartedAt: ws.startedAt, RetiredAt: r.now(), Reason: reason, Exit: exit, Environment: ws.leased.account()}
	rec.Exit.Stderr = nil
	for i, e := range rec.Exit.Escaped {
		rec.Exit.Escaped[i].Command = ws.secrets.RedactText(e.Command)
	}
	rec.Exit.Error = ws.secrets.RedactText(rec.Exit.Error)
	dir := filepath.Join(r.cfg.Dir, WarmDir)
	if err := os.MkdirAll(dir, 0o700); err == nil {
		base := filepath.Join(dir, ws.company+"-"+ws.actor+"-"+strconv.Itoa(ws.sess.Index))
		b, _ := json.MarshalIndent(rec, "", "  ")
		_ = os.WriteFile(base+".json", append(b, '\n'), 0o600)
		_ = os.WriteFile(base+".stderr.log", []byte(ws.secrets.RedactText(string(exit.Stderr))), 0o600)
	}
	return exit
}

// retireAllWarm retires every warm session (Shutdown, after the last run).
func (r *Runner) retireAllWarm() {
	r.mu.Lock()
	all := make([]*warmSession, 0, len(r.warm))
	for _, k := range slices.Sorted(maps.Keys(r.warm)) {
		all = append(all, r.warm[k])
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, ws := range all {
		wg.Go(func() { r.retireWarm(ws, "the server shut down") })
	}
	wg.Wait()
}
