package attempt

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/verdict"
)

// maxReasonMatchers is how many failing matchers a reason names before "and N more".
const maxReasonMatchers = 3

// Judge is the verdict of one attempt: a pure function of what its stages returned
// (docs/ARCHITECTURE.md "Verdicts"). Ordered rules, first match wins:
//
//  1. a leak — found at teardown (home, workspace, evidence), printed by an agent (the
//     runner redacted it), or a leak fault of any stage → failed, secret_leak; it
//     overrides everything;
//     1a. the control-plane server exited before teardown stopped it (Teardown.ServerDied:
//     the harness's own process gone, so the observations and the cleanup that needed
//     it are not the candidate's to answer for) → inconclusive,
//     transient_infrastructure, the cleanup's problems named in the reason;
//  2. cleanup not confirmed (a teardown problem, among them a run's agent that left
//     processes outside its process group and what the attempt's marker sweep found
//     after the server stopped) → failed, cleanup_failure (a teardown that cannot confirm
//     its cleanup fails the cell, and so does a process group that survives);
//  3. interrupted (the attempt's context, or the flow, saw a cancellation) →
//     inconclusive, transient_infrastructure;
//  4. a harness or provider fault, in stage order (a panic, provision, fixtures, flow,
//     observe, verify, grade, then the runs' records: a process never started, a collector
//     error, a CLI failure its words blame on the harness or the provider) →
//     inconclusive with its class;
//  5. required evidence missing → inconclusive, permanent_infrastructure;
//  6. a missed deadline, a hung or flooding process of a fixture program or a live
//     provider → inconclusive with its class (paceFault); of a scripted, offline agent
//     → failed, candidate_failure, the deadline named;
//     6a. a run whose event stream is incomplete (eventStreamComplete false: a CLI that
//     exited without its terminal event) → inconclusive, reason
//     ReasonEventStreamIncomplete (provider_variance live, permanent_infrastructure
//     otherwise), unless a runtime_metadata matcher failed: the run's outcome was not
//     observed whole, so the matchers that grade it (run_status first) and the flow's
//     contract checks cannot blame the candidate, while the launch facts are observed
//     apart from the stream and still fail the cell;
//  7. a matcher that failed (neither passed nor not reached) → failed,
//     candidate_failure (after the candidate's own failure, when there is one) — the
//     observation is final, so a definite mismatch blames the candidate even when
//     another matcher was not reached;
//  8. a candidate fault (a flow contract violation, a protected file the verifier
//     depends on changed — ReasonVerifierTampered —, a CLI that exited non-zero) →
//     failed, candidate_failure;
//  9. no matcher evaluated → inconclusive, permanent_infrastructure;
//  10. a matcher not reached → inconclusive, permanent_infrastructure;
//  11. otherwise → passed.
//
// Reasons hold only the stages' texts, which the stages redacted.
//
// Judge is Prejudge followed by Prejudged.With over the matchers' outcomes: what the
// matchers cannot change is decided first, so that a regrade of the stored evidence
// (docs/regrade.md) judges new outcomes by the same rules.
func Judge(s *Stages) verdict.Judgement {
	return Prejudge(s).With(s.Grades.Matchers)
}

// Prejudged is what a judgement holds apart from the matchers' outcomes (Prejudge):
// Decided, the judgement of rules 1–6, which no matcher changes (nil: none
// applied); Stream, the judgement of rule 6a, which stands unless a runtime_metadata
// matcher failed (nil: every event stream was complete); Candidate, the candidate's
// own faults in their words (rule 8: a flow contract violation, a protected file
// changed, a CLI that exited non-zero). It is kept in grading.json as evidence.
type Prejudged struct {
	Decided   *verdict.Judgement `json:"decided,omitempty"`
	Stream    *verdict.Judgement `json:"stream,omitempty"`
	Candidate []string           `json:"candidate,omitempty"`
}

// Prejudge applies Judge's rules 1–6 and collects what rules 6a and 8 need.
func Prejudge(s *Stages) Prejudged {
	faults, paced := stageFaults(s)
	decided := func(j verdict.Judgement) Prejudged { return Prejudged{Decided: &j} }
	if leaks := leaksOf(s, faults); len(leaks) > 0 {
		return decided(judgement(verdict.Failed, verdict.SecretLeak, "secret leak: "+strings.Join(leaks, "; ")))
	}
	if died := s.Teardown.ServerDied; died != "" {
		if !s.Teardown.Confirmed {
			died += "; " + cleanupReason(s.Teardown)
		}
		return decided(faultJudgement(verdict.HarnessFault(errors.New(died), true)))
	}
	if !s.Teardown.Confirmed {
		return decided(judgement(verdict.Failed, verdict.CleanupFailure, cleanupReason(s.Teardown)))
	}
	if s.Interrupted || s.Flow.Interrupted {
		return decided(campaign.InterruptedJudgement())
	}
	var p Prejudged
	for _, f := range faults {
		switch f.Origin {
		case verdict.Candidate:
			p.Candidate = append(p.Candidate, f.Error())
		case verdict.Harness, verdict.Provider:
			return decided(faultJudgement(f))
		}
	}
	if len(s.Teardown.Missing) > 0 {
		return decided(judgement(verdict.Inconclusive, verdict.PermanentInfrastructure, "collector error: missing required evidence: "+strings.Join(s.Teardown.Missing, ", ")))
	}
	if len(paced) > 0 {
		return decided(faultJudgement(paced[0]))
	}
	if inc := incompleteStreams(s.Observation.Runs, s.Flow.Killed); len(inc) > 0 {
		j := streamJudgement(s.Pace, inc)
		p.Stream = &j
	}
	return p
}

// With judges the matchers' outcomes ms after what p decided: p.Decided when set;
// else p.Stream unless a runtime_metadata matcher failed; else the matchers and the
// candidate's own faults (rules 7–11).
func (p Prejudged) With(ms []match.Outcome) verdict.Judgement {
	if p.Decided != nil {
		return *p.Decided
	}
	if p.Stream != nil && !runtimeMetadataFailed(ms) {
		return *p.Stream
	}
	return matcherJudgement(ms, p.Candidate)
}

// stageFaults are the faults the stages returned, in stage order (faults), and the
// missed deadlines, hangs and floods blamed by pace (paced): the flow's deadline
// first, then the runs'.
func stageFaults(s *Stages) (faults, paced []*verdict.Fault) {
	for _, f := range []*verdict.Fault{s.Panic, s.Provisioned.Fault, s.Fixtures.Fault, s.Flow.Fault} {
		if f != nil {
			faults = append(faults, f)
		}
	}
	if len(s.Flow.Problems) > 0 {
		faults = append(faults, verdict.CandidateFault(fmt.Errorf("flow: %s", strings.Join(s.Flow.Problems, "; "))))
	}
	if t := s.Verification.Tampered; len(t) > 0 {
		faults = append(faults, verdict.CandidateFault(fmt.Errorf("%s: the agent changed files the verifier depends on: %s", ReasonVerifierTampered, strings.Join(t, ", "))))
	}
	for _, f := range []*verdict.Fault{s.Observation.Fault, s.Verification.Fault, s.Grades.Fault} {
		if f != nil {
			faults = append(faults, f)
		}
	}
	if s.Flow.Deadline != "" {
		paced = append(paced, paceFault(s.Pace, "the "+s.Flow.Deadline+" deadline", false))
	}
	runs, runPaced := runFaults(s.Pace, s.Observation.Runs)
	return append(faults, runs...), append(paced, runPaced...)
}

// leaksOf lists every leak: found at teardown, printed by a run's agent (the runner
// redacted it from its output, but the agent printed it), or a leak fault.
func leaksOf(s *Stages, faults []*verdict.Fault) []string {
	leaks := append([]string(nil), s.Teardown.Leaks...)
	for _, r := range s.Observation.Runs {
		if t := r.Termination; t != nil && t.SecretsRedacted > 0 {
			leaks = append(leaks, fmt.Sprintf("the agent of run %s printed a secret (the runner redacted it from %d piece(s) of its output)", r.RunID, t.SecretsRedacted))
		}
	}
	for _, f := range faults {
		if f.Class == verdict.SecretLeak {
			leaks = append(leaks, f.Error())
		}
	}
	return leaks
}

// ReasonEventStreamIncomplete starts the reason of an attempt that cannot pass
// because a run's event stream lacked its terminal event (docs/processes.md "The
// event stream is evidence").
const ReasonEventStreamIncomplete = "event_stream_incomplete"

// incompleteStreams lists the runs whose termination says their event stream is
// incomplete and nothing else went wrong with their process (it started, did not time
// out or flood, exited 0 or was stopped: a non-zero exit is the CLI's own failure,
// cliFault). A run whose process the flow killed (killed: flow crash_retry) is not
// listed: its stream was cut by the harness, on purpose, and its outcome is the
// board's (the run failed).
func incompleteStreams(runs []api.HeartbeatRun, killed []string) []string {
	var out []string
	for _, r := range runs {
		if slices.Contains(killed, r.RunID) {
			continue
		}
		t := r.Termination
		if t == nil || t.EventStreamComplete == nil || *t.EventStreamComplete || !t.Started || t.TimedOut || t.OutputExceeded || t.CollectorError != "" {
			continue
		}
		if t.ExitCode != nil && *t.ExitCode != 0 {
			continue
		}
		out = append(out, r.RunID)
	}
	return out
}

// streamJudgement is rule 6a: inconclusive with ReasonEventStreamIncomplete (it
// stands unless a runtime_metadata matcher failed: runtimeMetadataFailed).
func streamJudgement(p Pace, runs []string) verdict.Judgement {
	class := verdict.PermanentInfrastructure
	if p == PaceLive {
		class = verdict.ProviderVariance
	}
	return judgement(verdict.Inconclusive, class, fmt.Sprintf("%s: the event stream of run %s ended without its terminal event (the agent exited without finishing cleanly): its outcome was not observed whole",
		ReasonEventStreamIncomplete, strings.Join(runs, ", ")))
}

// runtimeMetadataFailed reports whether a runtime_metadata matcher of ms failed
// (neither passed nor not reached).
func runtimeMetadataFailed(ms []match.Outcome) bool {
	for _, m := range ms {
		if m.Kind == match.KindRuntimeMetadata && !m.Passed && !m.NotReached {
			return true
		}
	}
	return false
}

func cleanupReason(t Teardown) string {
	if len(t.Problems) == 0 {
		return "cleanup was not confirmed"
	}
	return "cleanup failed: " + strings.Join(t.Problems, "; ")
}

// faultJudgement is the judgement of one fault: its class's verdict, and its words
// after the class's ("transient infrastructure failure: server start failed: …"); a
// candidate's own words stand alone.
func faultJudgement(f *verdict.Fault) verdict.Judgement {
	if f.Origin == verdict.Candidate {
		return judgement(f.Class.Verdict(), f.Class, f.Error())
	}
	return judgement(f.Class.Verdict(), f.Class, f.Class.Words()+": "+f.Error())
}

// matcherJudgement judges the matchers after every fault but the candidate's own.
func matcherJudgement(ms []match.Outcome, own []string) verdict.Judgement {
	var failed, notReached []string
	for i, m := range ms {
		switch {
		case m.Passed:
		case m.NotReached:
			notReached = append(notReached, describeMatcher(i, m))
		default:
			failed = append(failed, describeMatcher(i, m))
		}
	}
	switch {
	case len(failed) > 0 && len(own) > 0:
		// The agent's own failure first (for example a CLI that exited non-zero, naming
		// the model-script step it broke), then the matchers it left failing.
		return judgement(verdict.Failed, verdict.CandidateFailure, strings.Join(own, "; ")+"; "+listReason("matcher failed", "matchers failed", failed))
	case len(failed) > 0:
		return judgement(verdict.Failed, verdict.CandidateFailure, listReason("matcher failed", "matchers failed", failed))
	case len(own) > 0:
		return judgement(verdict.Failed, verdict.CandidateFailure, strings.Join(own, "; "))
	case len(ms) == 0:
		return judgement(verdict.Inconclusive, verdict.PermanentInfrastructure, "no matcher was evaluated")
	case len(notReached) > 0:
		return judgement(verdict.Inconclusive, verdict.PermanentInfrastructure, listReason("matcher not reached", "matchers not reached", notReached))
	}
	return judgement(verdict.Passed, "", fmt.Sprintf("every matcher passed (%d), cleanup confirmed, no leak", len(ms)))
}

func describeMatcher(i int, m match.Outcome) string {
	return fmt.Sprintf("#%d %s: %s", i+1, m.Kind, m.Detail)
}

func listReason(one, many string, items []string) string {
	head := one
	if len(items) > 1 {
		head = fmt.Sprintf("%d %s", len(items), many)
	}
	shown := items[:min(len(items), maxReasonMatchers)]
	s := head + ": " + strings.Join(shown, "; ")
	if rest := len(items) - len(shown); rest > 0 {
		s += fmt.Sprintf("; and %d more", rest)
	}
	return s
}

// judgement builds a verdict.Judgement.
func judgement(v verdict.Verdict, c verdict.FailureClass, reason string) verdict.Judgement {
	return verdict.Judgement{Verdict: v, FailureClass: c, Reason: reason}
}

// facts are the facts result.json reports of an attempt.
func facts(s *Stages) *campaign.Facts {
	f := s.Observation.Facts
	if f.IssueID == "" {
		f.IssueID, f.IssueIdentifier = s.Fixtures.TaskID, s.Fixtures.Identifier
	}
	f.Matchers = s.Grades.Matchers
	f.WorkspaceSource = s.Provisioned.Source
	f.Trajectories = s.Teardown.Trajectories
	if ls := s.Teardown.Leases; len(ls) > 0 {
		f.Leases = ls
		f.RuntimeUsage = leaseRuntime(ls[0].Provider, ls, s.Observation.Runs)
	}
	return &f
}
