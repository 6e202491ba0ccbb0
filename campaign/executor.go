package campaign

import (
	"context"

	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/redact"
)

// Executor runs one attempt of one cell in isolation (DESIGN.md "The way data flows").
// The scheduler calls ExecuteAttempt concurrently from up to Plan.MaxParallel
// goroutines, each time for a brand-new attempt; an implementation shares nothing
// between attempts.
//
// The contract the real executor implements:
//
//   - Isolation: a private temp root (instance home, workspace, private artifacts), its
//     own `agentproof serve` child on a loopback port with its own SQLite file, fresh
//     instance secrets and an explicit environment; fixtures through a Registry
//     (company → secrets → environment → agent → [project] → task) over the public API;
//     the case's flow as the human, through the same API.
//   - Deadlines: it enforces plan.AttemptTimeout and plan.TurnTimeout itself and reports
//     a missed one in DeadlineMissed (never as Err), so that a deadline is told apart
//     from an interruption.
//   - Cancellation: when ctx is cancelled (Ctrl-C, SIGTERM) it stops the agent and the
//     server (SIGTERM, SIGKILL after 5 s), still tears down with
//     context.WithoutCancel(ctx), still scans for leaks, and returns promptly with
//     Interrupted set.
//   - Grading: it observes the final state through the API and the workspace, evaluates
//     plan.Case.Matchers with match, and reports everything in AttemptOutcome; the
//     verdict is not its decision (Judge makes it, uniformly for every executor).
//   - Evidence: it writes its evidence under plan.Dir below the results root with
//     evidence.WriteFileAtomic; result.json is written from the judged AttemptResult.
//
// ExecuteAttempt never panics for a failing attempt: every failure is an outcome.
type Executor interface {
	ExecuteAttempt(ctx context.Context, plan AttemptPlan) AttemptOutcome
}

// AttemptOutcome is what an executor observed about one attempt: plain facts, judged by
// Judge. It carries no schema type, so the result writer maps it to result.json. Texts
// (errors, problems, leak descriptions) must already be redacted.
type AttemptOutcome struct {
	// Matchers are the outcomes of the case's matchers, in case order; nil when the
	// attempt never reached grading.
	Matchers []match.Outcome
	// DeadlineMissed names the deadline that passed ("attempt", "turn 2"), or "".
	DeadlineMissed string
	// CollectorError is why evidence could not be collected completely, or "".
	CollectorError string
	// Err is the first harness, fixture or flow error, or nil; ClassifyError gives its
	// class (a *ClassError states it explicitly).
	Err error
	// CleanupConfirmed is true when teardown ran and every fixture, process and temp
	// root was confirmed removed. Judge fails an attempt without it.
	CleanupConfirmed bool
	// CleanupProblem says what could not be cleaned up (a process group that survived
	// SIGKILL, a temp root that could not be removed, a teardown error), or "".
	CleanupProblem string
	// Leaks describe secret leaks found (redact.Leak.String(): reason and place, never
	// the value). Any leak fails the attempt.
	Leaks []string
	// Interrupted is true when the attempt's context was cancelled before it finished.
	Interrupted bool
	// Facts are what result.json reports beside the verdict (task, runs, turns,
	// termination, usage, evidence files); nil when the executor collects none.
	Facts *AttemptFacts

	// secrets is the attempt's secret set and evidence its evidence writer, both kept
	// for WriteResult (the LocalExecutor sets them; nil for other executors).
	secrets  *redact.Set
	evidence *evidenceWriter
}
