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
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/redact"
)

// Warm lifecycle (docs/acp.md "Warm lifecycle"): an agent whose adapterConfig says
// lifecycleMode warm keeps one ACP session — one agent process — for all its runs
// (a Pi agent one Pi session: pi_warm.go, docs/pi.md).
// The first run starts it (ACPDriver.Start with ACPEnv.Warm: the MCP server of
// session/new reads the current run from the session's run binding file instead of
// carrying one run's token); every run binds the session to itself (its id and token
// in the binding file, its board decider for permissions), sends its prompt as one
// session/prompt, and unbinds it when the turn ends. A session whose process exited,
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
// served in order, why it was retired, and the process's exit (agent.ProcessExit:
// exit code or signal, signals sent, descendants killed, escaped processes).
type WarmRecord struct {
	Schema            string            `json:"schema"`
	CompanyID         string            `json:"companyId"`
	ActorID           string            `json:"actorId"`
	SessionIndex      int               `json:"sessionIndex"`
	SessionID         string            `json:"sessionId"`
	PID               int               `json:"pid"`
	ProcessStartTicks uint64            `json:"processStartTicks"`
	Runs              []string          `json:"runs"`
	StartedAt         string            `json:"startedAt"`
	RetiredAt         string            `json:"retiredAt"`
	Reason            string            `json:"reason"`
	Exit              agent.ProcessExit `json:"exit"`
	// Environment is the sandbox provider's account of the process (limits hit,
	// problems, facts), nil on the host.
	Environment *environment.Settled `json:"environment,omitempty"`
}

// warmSession is one agent's warm session: an ACP session (sess) or a Pi session (pi,
// pi_warm.go), never both. Its fields are used by one run at a time (a company runs one
// run at a time); the runner's map is guarded by r.mu.
type warmSession struct {
	key       string
	company   string
	actor     string
	config    string // the adapterConfig it was started with
	sess      *agent.ACPSession
	pi        *agent.PiSession
	decider   *warmDecider
	questions *warmQuestions // Pi's question decider (nil for ACP)
	secrets   *redact.Set    // every run token it was bound to and the resolved secrets
	runs      []string
	startedAt string
	identity  agent.ProcessIdentity
	leased    *leasedACP // the sandbox launch of its process (nil on the host)
}

// alive reports whether the session can serve another turn.
func (ws *warmSession) alive() bool {
	if ws.pi != nil {
		return ws.pi.Alive()
	}
	return ws.sess.Alive()
}

// close retires the session's process (Close of its driver's session).
func (ws *warmSession) close() agent.ProcessExit {
	if ws.pi != nil {
		return ws.pi.Close()
	}
	return ws.sess.Close()
}

// index and id are the session's index among the agent's sessions and its protocol id.
func (ws *warmSession) index() int {
	if ws.pi != nil {
		return ws.pi.Index
	}
	return ws.sess.Index
}

func (ws *warmSession) id() string {
	if ws.pi != nil {
		return ws.pi.SessionID
	}
	return ws.sess.ID
}

// unbind detaches the session from the run it served: no decider answers between
// turns (a request then is answered cancelled).
func (ws *warmSession) unbind() {
	ws.decider.set(nil)
	if ws.questions != nil {
		ws.questions.set(nil)
	}
}

// warmDecider is the permission decider of a warm session: the board decider of the
// run bound now, none between turns (a request then is answered cancelled).
type warmDecider struct {
	mu  sync.Mutex
	cur *boardDecider
}

func (w *warmDecider) set(d *boardDecider) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cur = d
}

// Decide hands the request to the bound run's board decider.
func (w *warmDecider) Decide(ctx context.Context, req agent.PermissionRequest) (agent.PermissionDecision, error) {
	w.mu.Lock()
	d := w.cur
	w.mu.Unlock()
	if d == nil {
		return agent.PermissionDecision{Cancelled: true}, nil
	}
	return d.Decide(ctx, req)
}

// warmKey is the key of j's agent's warm session: company/agent.
func warmKey(j job) string { return j.company + "/" + j.actor.ID }

// liveWarm answers the running warm session of j's agent when it can serve j's run (its
// adapterConfig unchanged, of the kind ofKind accepts, its process alive), with j's run
// token and secrets added to its secret set; nil otherwise, after retiring the one that
// cannot serve.
func (r *Runner) liveWarm(j job, env agent.RunEnv, ofKind func(*warmSession) bool) *warmSession {
	r.mu.Lock()
	ws := r.warm[warmKey(j)]
	r.mu.Unlock()
	if ws == nil {
		return nil
	}
	switch {
	case ws.config != string(j.actor.AdapterConfig) || !ofKind(ws):
		r.retireWarm(ws, "the agent's adapterConfig changed")
		return nil
	case !ws.alive():
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
// (reused), or a new one started for it. Errors: the start's (*agent.StartError), or a
// binding that could not be written (the session is then retired).
// leased and launch place a new session's process in the run's sandbox lease (nil on
// the host).
func (r *Runner) warmFor(ctx context.Context, j job, d *agent.ACPDriver, env agent.RunEnv, secrets *redact.Set, markers []string, leased *leasedACP, launch agent.ACPLaunchFunc) (*warmSession, bool, error) {
	key, config := warmKey(j), string(j.actor.AdapterConfig)
	ws := r.liveWarm(j, env, func(ws *warmSession) bool { return ws.sess != nil })
	if ws != nil {
		if err := ws.sess.Bind(j.runID, env.RunToken); err != nil {
			r.retireWarm(ws, "its run binding could not be written")
			return nil, false, &agent.StartError{Stage: "launch", Err: fmt.Errorf("binding the warm session to run %s: %w", j.runID, err)}
		}
		ws.decider.set(&boardDecider{r: r, j: j, run: j.runID})
		ws.runs = append(ws.runs, j.runID)
		return ws, true, nil
	}
	dec := &warmDecider{}
	dec.set(&boardDecider{r: r, j: j, run: j.runID})
	startedAt := r.now()
	sess, err := d.Start(ctx, agent.ACPEnv{Run: env, Decider: dec, Redact: secrets, ExtraMarkers: markers, Warm: true, Launch: launch})
	if err != nil {
		return nil, false, err
	}
	ws = &warmSession{key: key, company: j.company, actor: j.actor.ID, config: config, sess: sess, decider: dec, secrets: secrets,
		runs: []string{j.runID}, startedAt: startedAt, leased: leased}
	ws.identity, _ = sess.Identity()
	r.mu.Lock()
	r.warm[key] = ws
	r.mu.Unlock()
	return ws, false, nil
}

// warmAfterTurn unbinds the warm session after j's turn. A session that can still
// serve a turn stays open (open true); one that cannot is retired now and its exit is
// the run's.
func (r *Runner) warmAfterTurn(ws *warmSession, j job) (exit agent.ProcessExit, open bool) {
	ws.decider.set(nil)
	bindErr := ws.sess.Bind("", "")
	if ws.sess.Alive() && bindErr == nil {
		return agent.ProcessExit{}, true
	}
	reason := "its turn in run " + j.runID + " broke the session or its process exited"
	if bindErr != nil {
		reason = "its run binding could not be cleared after run " + j.runID
	}
	return r.retireWarm(ws, reason), false
}

// retireWarm closes ws (its process and descendants), forgets it and records its exit
// in WarmDir; it returns the exit.
func (r *Runner) retireWarm(ws *warmSession, reason string) agent.ProcessExit {
	r.mu.Lock()
	if r.warm[ws.key] == ws {
		delete(r.warm, ws.key)
	}
	r.mu.Unlock()
	ws.unbind()
	exit := ws.close()
	rec := WarmRecord{Schema: WarmRecordSchema, CompanyID: ws.company, ActorID: ws.actor, SessionIndex: ws.index(),
		SessionID: ws.secrets.RedactText(ws.id()), PID: ws.identity.PID, ProcessStartTicks: ws.identity.StartTime,
		Runs: slices.Clone(ws.runs), StartedAt: ws.startedAt, RetiredAt: r.now(), Reason: reason, Exit: exit, Environment: ws.leased.account()}
	rec.Exit.Stderr = nil
	for i, e := range rec.Exit.Escaped {
		rec.Exit.Escaped[i].Command = ws.secrets.RedactText(e.Command)
	}
	rec.Exit.Error = ws.secrets.RedactText(rec.Exit.Error)
	dir := filepath.Join(r.cfg.Dir, WarmDir)
	if err := os.MkdirAll(dir, 0o700); err == nil {
		base := filepath.Join(dir, ws.company+"-"+ws.actor+"-"+strconv.Itoa(ws.index()))
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
