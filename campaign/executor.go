package campaign

import (
	"context"
	"encoding/json"

	"github.com/agentproof/agentproof/billing"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
	"github.com/agentproof/agentproof/workspace"
	wsource "github.com/agentproof/agentproof/workspace/source"
)

// Executor runs one attempt of one cell in isolation (docs/ARCHITECTURE.md "Stages").
// The scheduler calls ExecuteAttempt concurrently from up to Plan.MaxParallel
// goroutines, each time for a brand-new attempt; an implementation shares nothing
// between attempts. The real one is package campaign/attempt's LocalExecutor.
//
// The contract:
//
//   - Isolation: a private temp root, its own control-plane server, fixtures through
//     the public API, the case's flow as the human through the same API.
//   - Deadlines: it enforces plan.AttemptTimeout and plan.TurnTimeout itself.
//   - Cancellation: when ctx is cancelled (Ctrl-C, SIGTERM) it stops the agent and the
//     server, still tears down with context.WithoutCancel(ctx), still scans for leaks,
//     and returns promptly with Interrupted set.
//   - Judgement: it judges the attempt itself (the verdict is a pure function of what
//     its stages returned) and reports the facts result.json shows beside the verdict.
//   - Evidence: it writes its evidence under plan.Dir below the results root through
//     an *Evidence; the scheduler writes result.json through the same writer as the
//     attempt ends (WriteResult).
//
// ExecuteAttempt never panics for a failing attempt: every failure is an outcome.
type Executor interface {
	ExecuteAttempt(ctx context.Context, plan AttemptPlan) Outcome
}

// Outcome is what an executor reports of one attempt: its judgement, whether it was
// interrupted, whether cleanup was confirmed, the facts result.json reports and the
// evidence writer and secret set its result must be written with. Texts must already
// be redacted.
type Outcome struct {
	Judgement verdict.Judgement
	// Interrupted is true when the attempt's context was cancelled before it finished.
	Interrupted bool
	// CleanupConfirmed is true when teardown ran and every fixture, process and temp
	// root was confirmed removed.
	CleanupConfirmed bool
	// Facts are what result.json reports beside the verdict; nil when none were
	// collected.
	Facts *Facts
	// Evidence is the attempt's evidence writer (nil: result.json is written through a
	// fresh one); Secrets the attempt's secret set (nil: none).
	Evidence *Evidence
	Secrets  *redact.Set
}

// Facts are the facts of an attempt that result.json reports beside the verdict: the
// task, the runs, the turns, the last process termination, usage, the
// matcher outcomes (the case's, then the profile's runtime metadata check) and what the
// heartbeat runner recorded launching each run.
type Facts struct {
	IssueID         string
	IssueIdentifier string
	RunIDs          []string
	TurnTimings     []result.TurnTiming
	Termination     json.RawMessage
	// Usage is the provider usage (one run's, or {"runs": [...]}), nil when none was
	// reported (unavailable, never zero).
	Usage    any
	Matchers []match.Outcome
	// Trajectories are the ATIF trajectories written of the attempt's runs.
	Trajectories []result.TrajectoryRef
	Runtime      []result.RuntimeFacts
	// Leases are the attempt's environment lease records (a sandbox cell's), and
	// RuntimeUsage the runtime estimate made of them (nil without a lease).
	Leases       []environment.LeaseRecord
	RuntimeUsage *billing.RuntimeUsage
	// WorkspaceDiff is what each turn changed in the workspace (bounded:
	// package workspace's diff limits), nil when none was recorded.
	WorkspaceDiff []workspace.TurnDiff
	// WorkspaceSource is the source the workspace was seeded from, with the digest
	// of what was read (nil: the workspace started empty).
	WorkspaceSource *wsource.Record
}

// InterruptedJudgement is the judgement of an attempt that an interruption cut short
// (inconclusive, transient_infrastructure).
func InterruptedJudgement() verdict.Judgement {
	return verdict.Judgement{Verdict: verdict.Inconclusive, FailureClass: verdict.TransientInfrastructure, Reason: "the attempt was interrupted"}
}
