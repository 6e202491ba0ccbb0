package heartbeat

import (
	"context"
	"sync"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/redact"
)

// Warm Pi sessions (docs/pi.md "Warm lifecycle in the runner"): an rpc:pi agent whose
// adapterConfig says lifecycleMode warm keeps one Pi process — one Pi session — for all
// its runs, like a warm ACP agent (warm.go, whose map, retirement and WarmRecord it
// shares). The first run starts it; every run binds it to itself for its turn — its
// board deciders for the write gate's permissions and the native questions, its run
// identity sent with the prompt (PiTurn: the extension's MCP bridge then acts as that
// run) — and unbinds it when the turn ends. A session whose process exited, whose turn
// broke it, or whose agent's adapterConfig changed is retired and the next run starts a
// fresh one; Shutdown retires every warm session after the last run.

// warmQuestions is the question decider of a warm Pi session: the board questions of
// the run bound now, none between turns (a dialog then is answered cancelled).
type warmQuestions struct {
	mu  sync.Mutex
	cur agent.QuestionDecider
}

func (w *warmQuestions) set(q agent.QuestionDecider) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cur = q
}

// Answer hands the question to the bound run's decider.
func (w *warmQuestions) Answer(ctx context.Context, req agent.QuestionRequest) (agent.QuestionAnswer, error) {
	w.mu.Lock()
	q := w.cur
	w.mu.Unlock()
	if q == nil {
		return agent.QuestionAnswer{Cancelled: true}, nil
	}
	return q.Answer(ctx, req)
}

// warmPiFor returns the warm Pi session of j's agent bound to j's run (its permission
// and question deciders): the running one (reused true), or a new one started for it.
// Errors: the start's (*agent.StartError).
func (r *Runner) warmPiFor(ctx context.Context, j job, d *agent.PiDriver, env agent.RunEnv, secrets *redact.Set, questions agent.QuestionDecider) (*warmSession, bool, error) {
	key, config := warmKey(j), string(j.actor.AdapterConfig)
	ws := r.liveWarm(j, env, func(ws *warmSession) bool { return ws.pi != nil })
	if ws != nil {
		ws.decider.set(&boardDecider{r: r, j: j, run: j.runID})
		ws.questions.set(questions)
		ws.runs = append(ws.runs, j.runID)
		return ws, true, nil
	}
	dec, qs := &warmDecider{}, &warmQuestions{}
	dec.set(&boardDecider{r: r, j: j, run: j.runID})
	qs.set(questions)
	startedAt := r.now()
	sess, err := d.Start(ctx, agent.PiEnv{Run: env, Permissions: dec, Questions: qs, Tools: r.cfg.PiTools, Redact: secrets, Now: r.cfg.Now})
	if err != nil {
		return nil, false, err
	}
	ws = &warmSession{key: key, company: j.company, actor: j.actor.ID, config: config, pi: sess, decider: dec, questions: qs,
		secrets: secrets, runs: []string{j.runID}, startedAt: startedAt}
	ws.identity, _ = sess.Identity()
	r.mu.Lock()
	r.warm[key] = ws
	r.mu.Unlock()
	return ws, false, nil
}

// warmPiAfterTurn unbinds the warm Pi session after j's turn. A session that can still
// serve a turn stays open (open true); one that cannot is retired now and its exit is
// the run's.
func (r *Runner) warmPiAfterTurn(ws *warmSession, j job) (exit agent.ProcessExit, open bool) {
	ws.unbind()
	if ws.alive() {
		return agent.ProcessExit{}, true
	}
	return r.retireWarm(ws, "its turn in run "+j.runID+" broke the session or its process exited"), false
}
