package attempt

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/verdict"
	"github.com/agentproof/agentproof/worker"
)

var (
	okMatcher         = match.Outcome{Kind: "issue_status", Passed: true, Detail: "matched"}
	failedMatcher     = match.Outcome{Kind: "message_contains", Detail: `expected "MARK"; observed "nothing"`}
	notReachedMatcher = match.Outcome{Kind: "message_contains", NotReached: true, Detail: "not reached: turn 2 was not observed (1 turns observed)"}
)

// graded is an attempt whose every stage ran, with the given matcher outcomes, a
// confirmed cleanup and the given pace: what Judge sees of a clean attempt.
func graded(p Pace, ms ...match.Outcome) *Stages {
	return &Stages{Pace: p, Fixtures: Fixtures{TaskID: "t-1"}, Grades: Grades{Matchers: ms}, Teardown: Teardown{Confirmed: true}}
}

func with(s *Stages, f func(*Stages)) *Stages { f(s); return s }

// record is a heartbeat record of run id whose process ended as t says.
func record(id, drv string, t api.Termination) api.HeartbeatRun {
	d, _ := driver.Parse(drv) // the zero Name for a record without a driver
	return api.HeartbeatRun{RunID: id, Driver: d, Status: "failed", Termination: &t}
}

// TestJudge is the verdict table over stage outcomes (docs/ARCHITECTURE.md
// "Verdicts"): no process runs; every row is plain stage values.
func TestJudge(t *testing.T) {
	t.Parallel()
	exit0, exit1 := 0, 1
	incomplete, complete := false, true
	runStatusFailed := match.Outcome{Kind: "run_status", Detail: `expected "succeeded"; observed "failed"`}
	runtimeFailed := match.Outcome{Kind: match.KindRuntimeMetadata, Detail: "binarySha256 differs"}
	tests := []struct {
		name       string
		stages     *Stages
		verdict    verdict.Verdict
		class      verdict.FailureClass
		reasonPart string
	}{
		{"every matcher passed", graded(PaceScripted, okMatcher, okMatcher), verdict.Passed, "", "every matcher passed (2)"},
		{"a matcher failed", graded(PaceScripted, okMatcher, failedMatcher), verdict.Failed, verdict.CandidateFailure, "matcher failed: #2 message_contains"},
		{"several failed, listed with a bound", graded(PaceScripted, failedMatcher, failedMatcher, failedMatcher, failedMatcher, failedMatcher),
			verdict.Failed, verdict.CandidateFailure, "5 matchers failed: #1 message_contains"},
		{"failed beats not reached", graded(PaceScripted, notReachedMatcher, failedMatcher), verdict.Failed, verdict.CandidateFailure, "#2"},
		{"not reached is inconclusive", graded(PaceScripted, okMatcher, notReachedMatcher), verdict.Inconclusive, verdict.PermanentInfrastructure, "matcher not reached: #2"},
		{"no matcher evaluated", graded(PaceScripted), verdict.Inconclusive, verdict.PermanentInfrastructure, "no matcher was evaluated"},

		// The verifier: a protected file changed is the candidate's, whatever the
		// matchers say; a verifier the harness could not run or killed is not.
		{"a changed protected file fails verifier_tampered, naming it", with(graded(PaceScripted, okMatcher, notReachedMatcher), func(s *Stages) {
			s.Verification.Tampered = []string{"tests/test.sh modified"}
		}), verdict.Failed, verdict.CandidateFailure, "verifier_tampered: the agent changed files the verifier depends on: tests/test.sh modified"},
		{"a verifier killed by the harness is inconclusive", with(graded(PaceScripted, failedMatcher), func(s *Stages) {
			s.Verification.Fault = stepFault("tests", worker.Outcome{Started: true, Aborted: true}, context.Canceled)
		}), verdict.Inconclusive, verdict.TransientInfrastructure, "verifier step tests was killed by the harness"},
		{"a verifier that cannot start is inconclusive", with(graded(PaceScripted, notReachedMatcher), func(s *Stages) {
			s.Verification.Fault = stepFault("tests", worker.Outcome{SpawnError: errors.New("exec format error")}, nil)
		}), verdict.Inconclusive, verdict.PermanentInfrastructure, "verifier step tests did not start: exec format error"},

		// A sandbox lease's limits: the host saw the agent exceed its pinned shape.
		{"a memory limit hit is the candidate's, the limit named", with(graded(PaceScripted, failedMatcher), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "reference", api.Termination{Started: true, Signal: "SIGKILL",
				Limits: []api.LimitHit{{Resource: "memory", Limit: 1 << 30, Events: 1, Detail: "memory limit 1073741824 bytes: 1 OOM kill(s)"}}})}
		}), verdict.Failed, verdict.CandidateFailure, "run r-1 exceeded its environment's resource limits: memory limit 1073741824 bytes: 1 OOM kill(s)"},
		{"a pids limit hit fails even a passing attempt", with(graded(PaceLive, okMatcher), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "exec", api.Termination{Started: true, TimedOut: true,
				Limits: []api.LimitHit{{Resource: "pids", Limit: 128, Events: 3, Detail: "pids limit 128: 3 fork(s) refused"}}})}
		}), verdict.Failed, verdict.CandidateFailure, "pids limit 128: 3 fork(s) refused"},
		{"an incomplete environment account is the harness's", with(graded(PaceScripted, okMatcher), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "reference", api.Termination{Started: true,
				EnvironmentProblems: []string{"no exit report from the sandbox init (init wrote nothing)"}})}
		}), verdict.Inconclusive, verdict.PermanentInfrastructure, "the environment's account of run r-1 is incomplete: no exit report"},

		// Safety first: a leak beats everything, a cleanup failure beats a pass.
		{"leak beats everything", with(graded(PaceScripted, failedMatcher), func(s *Stages) {
			s.Teardown = Teardown{Leaks: []string{"evidence result.json: exact secret value"}, Problems: []string{"temp root could not be removed"}}
			s.Provisioned.Fault = verdict.HarnessFault(errors.New("server start failed"), true)
			s.Flow.Deadline = "attempt (1000 ms)"
			s.Interrupted = true
		}), verdict.Failed, verdict.SecretLeak, "secret leak: evidence result.json: exact secret value"},
		{"a printed secret is a leak", with(graded(PaceScripted, okMatcher), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{{RunID: "r-1", Termination: &api.Termination{Started: true, SecretsRedacted: 2}}}
		}), verdict.Failed, verdict.SecretLeak, "the agent of run r-1 printed a secret"},
		{"a secret in a fixture record is a leak", with(graded(PaceScripted, okMatcher), func(s *Stages) {
			s.Fixtures.Fault = verdict.LeakFault(errors.New("secret value leaked into a fixture record id"))
		}), verdict.Failed, verdict.SecretLeak, "fixture record id"},
		{"cleanup failure beats a pass", with(graded(PaceScripted, okMatcher), func(s *Stages) {
			s.Teardown = Teardown{Problems: []string{"processes of the server's group 4242 outlived it and were killed"}}
		}), verdict.Failed, verdict.CleanupFailure, "cleanup failed: processes of the server's group 4242"},
		{"cleanup failure beats a deadline and a harness fault", with(graded(PaceLive, okMatcher), func(s *Stages) {
			s.Teardown = Teardown{Problems: []string{"fixture teardown failed"}}
			s.Flow.Deadline = "turn 2 (600000 ms)"
			s.Fixtures.Fault = verdict.HarnessFault(errors.New("creating the agent: 503"), true)
		}), verdict.Failed, verdict.CleanupFailure, "fixture teardown failed"},
		{"a server that died under the attempt is the harness's, its refused teardown too", with(graded(PaceScripted, failedMatcher), func(s *Stages) {
			s.Teardown = Teardown{ServerDied: "the control-plane server (pid 42) exited before the harness stopped it: signal: killed",
				Problems: []string{"fixture teardown failed: connect: connection refused"}}
		}), verdict.Inconclusive, verdict.TransientInfrastructure, "signal: killed; cleanup failed: fixture teardown failed: connect: connection refused"},
		{"a leak beats a server that died", with(graded(PaceScripted, okMatcher), func(s *Stages) {
			s.Teardown = Teardown{ServerDied: "the control-plane server (pid 42) exited before the harness stopped it: signal: killed",
				Leaks: []string{"evidence result.json: exact secret value"}, Confirmed: true}
		}), verdict.Failed, verdict.SecretLeak, "secret leak"},
		{"cleanup not confirmed", with(graded(PaceScripted, okMatcher), func(s *Stages) { s.Teardown = Teardown{} }),
			verdict.Failed, verdict.CleanupFailure, "cleanup was not confirmed"},
		{"interrupted", with(graded(PaceScripted, failedMatcher), func(s *Stages) { s.Interrupted = true }),
			verdict.Inconclusive, verdict.TransientInfrastructure, "interrupted"},

		// Honest blame: the harness's faults are never the candidate's.
		{"harness fault in provisioning is inconclusive infrastructure", with(graded(PaceScripted), func(s *Stages) {
			s.Provisioned.Fault = verdict.HarnessFault(errors.New("server start failed: no ready line"), true)
		}), verdict.Inconclusive, verdict.TransientInfrastructure, "transient infrastructure failure: server start failed"},
		{"a refused fixture is inconclusive, never failed", with(graded(PaceScripted, failedMatcher), func(s *Stages) {
			s.Fixtures.Fault = verdict.HarnessFault(errors.New(`fixture "company" setup: creating the company: board_input_invalid: issue prefix`), false)
		}), verdict.Inconclusive, verdict.PermanentInfrastructure, "creating the company: board_input_invalid"},
		{"a board refusal during the flow beats failed matchers", with(graded(PaceScripted, failedMatcher), func(s *Stages) {
			s.Flow.Fault = verdict.HarnessFault(errors.New("answering question q-1: 502 bad gateway"), true)
		}), verdict.Inconclusive, verdict.TransientInfrastructure, "answering question q-1"},
		{"a panic is a harness fault", with(graded(PaceScripted, okMatcher), func(s *Stages) {
			s.Panic = verdict.HarnessFault(errors.New("harness panic: boom"), false)
		}), verdict.Inconclusive, verdict.PermanentInfrastructure, "harness panic"},
		{"missing credential", with(graded(PaceLive), func(s *Stages) {
			s.Fixtures.Fault = verdict.HarnessFault(errors.New("missing credential OPENAI_API_KEY"), false)
		}), verdict.Inconclusive, verdict.PermanentInfrastructure, "missing credential"},
		{"a process never started is the harness's", with(graded(PaceScripted, failedMatcher), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "exec", api.Termination{Summary: "not started: no such file"})}
		}), verdict.Inconclusive, verdict.PermanentInfrastructure, "the agent process of run r-1 was not started"},
		{"missing evidence", with(graded(PaceScripted, okMatcher), func(s *Stages) { s.Teardown.Missing = []string{"workspace-manifest.json"} }),
			verdict.Inconclusive, verdict.PermanentInfrastructure, "missing required evidence: workspace-manifest.json"},
		{"a leak beats missing evidence", with(graded(PaceScripted, okMatcher), func(s *Stages) {
			s.Teardown.Missing = []string{"workspace-manifest.json"}
			s.Teardown.Leaks = []string{"evidence a.json: exact secret value"}
		}), verdict.Failed, verdict.SecretLeak, "evidence a.json"},

		// Deadlines, hangs and floods are blamed by pace.
		{"scripted-model turn deadline is the candidate's", with(graded(PaceScripted, failedMatcher), func(s *Stages) { s.Flow.Deadline = "turn 2 (600000 ms)" }),
			verdict.Failed, verdict.CandidateFailure, "missed the turn 2 (600000 ms) deadline"},
		{"scripted-model hang is the candidate's", with(graded(PaceScripted, okMatcher), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "exec:codex", api.Termination{Started: true, TimedOut: true, DurationMs: 300000})}
		}), verdict.Failed, verdict.CandidateFailure, "missed the run r-1 process deadline"},
		{"scripted-model flood is the candidate's", with(graded(PaceScripted, okMatcher), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "exec:codex", api.Termination{Started: true, OutputExceeded: true, OutputBytes: 1 << 20, CollectorError: "output overflow"})}
		}), verdict.Failed, verdict.CandidateFailure, "run r-1 exceeded its output bound"},
		{"live deadline is provider variance", with(graded(PaceLive, failedMatcher), func(s *Stages) { s.Flow.Deadline = "attempt (480000 ms)" }),
			verdict.Inconclusive, verdict.ProviderVariance, "provider variance: missed the attempt (480000 ms) deadline"},
		{"live hang is provider variance", with(graded(PaceLive, okMatcher), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "exec:codex", api.Termination{Started: true, TimedOut: true})}
		}), verdict.Inconclusive, verdict.ProviderVariance, "run r-1 process deadline"},
		{"fixture hang keeps its calibrated class", with(graded(PaceFixture, failedMatcher), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "fixture:hang", api.Termination{Started: true, TimedOut: true})}
		}), verdict.Inconclusive, verdict.ProviderVariance, "run r-1 process deadline"},
		{"fixture flood is a collector error", with(graded(PaceFixture, failedMatcher), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "fixture:noisy", api.Termination{Started: true, OutputExceeded: true, CollectorError: "output overflow"})}
		}), verdict.Inconclusive, verdict.PermanentInfrastructure, "collector error: run r-1 exceeded its output bound"},
		{"another collector error is the harness's", with(graded(PaceScripted, okMatcher), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "reference", api.Termination{Started: true, CollectorError: "exit not confirmed"})}
		}), verdict.Inconclusive, verdict.PermanentInfrastructure, "collector error of run r-1: exit not confirmed"},
		{"a harness fault beats a scripted deadline", with(graded(PaceScripted), func(s *Stages) {
			s.Flow.Deadline = "turn 1 (1000 ms)"
			s.Observation.Fault = verdict.HarnessFault(errors.New("reading the heartbeat runs: connection refused"), true)
		}), verdict.Inconclusive, verdict.TransientInfrastructure, "reading the heartbeat runs"},

		// An incomplete event stream: the run's outcome was not observed whole.
		{"an incomplete event stream beats the run_status failure it causes", with(graded(PaceScripted, okMatcher, runStatusFailed, failedMatcher), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "exec:codex", api.Termination{Started: true, ExitCode: &exit0, EventStreamComplete: &incomplete})}
		}), verdict.Inconclusive, verdict.PermanentInfrastructure, "event_stream_incomplete: the event stream of run r-1"},
		{"an incomplete event stream beats a flow contract violation", with(graded(PaceScripted, okMatcher), func(s *Stages) {
			s.Flow.Problems = []string{"no pending question after run 1"}
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "exec:codex", api.Termination{Started: true, ExitCode: &exit0, EventStreamComplete: &incomplete})}
		}), verdict.Inconclusive, verdict.PermanentInfrastructure, "event_stream_incomplete"},
		{"an incomplete event stream live is provider variance", with(graded(PaceLive, runStatusFailed), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "exec:codex", api.Termination{Started: true, ExitCode: &exit0, EventStreamComplete: &incomplete})}
		}), verdict.Inconclusive, verdict.ProviderVariance, "event_stream_incomplete"},
		{"an incomplete event stream never passes", with(graded(PaceScripted, okMatcher), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "exec:codex", api.Termination{Started: true, ExitCode: &exit0, EventStreamComplete: &incomplete})}
		}), verdict.Inconclusive, verdict.PermanentInfrastructure, "event_stream_incomplete"},
		{"the stream of a run the flow killed (crash_retry) is not an infrastructure fault", with(graded(PaceScripted, okMatcher), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "exec:codex", api.Termination{Started: true, Signal: "SIGKILL", EventStreamComplete: &incomplete}),
				record("r-2", "exec:codex", api.Termination{Started: true, ExitCode: &exit0, EventStreamComplete: &complete})}
			s.Flow.Killed = []string{"r-1"}
		}), verdict.Passed, "", "every matcher passed"},
		{"another run's incomplete stream beside a killed one still is", with(graded(PaceScripted, okMatcher), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "exec:codex", api.Termination{Started: true, Signal: "SIGKILL", EventStreamComplete: &incomplete}),
				record("r-2", "exec:codex", api.Termination{Started: true, ExitCode: &exit0, EventStreamComplete: &incomplete})}
			s.Flow.Killed = []string{"r-1"}
		}), verdict.Inconclusive, verdict.PermanentInfrastructure, "event_stream_incomplete: the event stream of run r-2 ended"},
		{"a wrong binary still fails beside an incomplete stream", with(graded(PaceScripted, runtimeFailed, runStatusFailed), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "exec:codex", api.Termination{Started: true, ExitCode: &exit0, EventStreamComplete: &incomplete})}
		}), verdict.Failed, verdict.CandidateFailure, "runtime_metadata"},
		{"a CLI that exited non-zero without its terminal event is its own failure", with(graded(PaceScripted, runStatusFailed), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "exec:codex", api.Termination{Started: true, ExitCode: &exit1, EventStreamComplete: &incomplete, Summary: "exit 1: boom"})}
		}), verdict.Failed, verdict.CandidateFailure, "run r-1 failed: exit 1: boom"},
		{"a CLI stopped after its result is graded on it", with(graded(PaceScripted, okMatcher), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{{RunID: "r-1", Driver: driver.MustParse("exec:codex"), Status: "succeeded", Termination: &api.Termination{Started: true,
				StoppedAfterResult: true, Signal: "SIGKILL", SignalsSent: []string{"SIGTERM", "SIGKILL"}, EventStreamComplete: &complete}}}
		}), verdict.Passed, "", "every matcher passed"},
		{"escaped processes are a cleanup failure", with(graded(PaceScripted, okMatcher), func(s *Stages) {
			s.Teardown = Teardown{Problems: first(escapedOf([]api.HeartbeatRun{{RunID: "r-1", Termination: &api.Termination{EscapedProcesses: []api.EscapedProcess{{PID: 42, Command: "sleep", Killed: true}}}}}, nil))}
		}), verdict.Failed, verdict.CleanupFailure, "the agent of run r-1 left 1 process(es) outside its process group: sleep (pid 42, killed)"},

		// The candidate's own failures.
		{"flow contract violation with passing matchers", with(graded(PaceScripted, okMatcher), func(s *Stages) {
			s.Flow.Problems = []string{"no pending question after run 1"}
		}), verdict.Failed, verdict.CandidateFailure, "flow: no pending question after run 1"},
		{"a CLI that exited non-zero names its failure before the matchers", with(graded(PaceScripted, failedMatcher), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "exec:codex", api.Termination{Started: true, ExitCode: &exit1, Summary: "exit 1: tool foo refused at step 1"})}
		}), verdict.Failed, verdict.CandidateFailure, "run r-1 failed: exit 1: tool foo refused at step 1; matcher failed"},
		{"a CLI's stream closing early is a scripted-model defect", with(graded(PaceScripted, failedMatcher), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "exec:codex", api.Termination{Started: true, ExitCode: &exit1, Summary: "error: stream disconnected before completion"})}
		}), verdict.Inconclusive, verdict.PermanentInfrastructure, "scripted model defect"},
		{"a live provider's 503 through the CLI is infrastructure", with(graded(PaceLive, failedMatcher), func(s *Stages) {
			s.Observation.Runs = []api.HeartbeatRun{record("r-1", "exec:codex", api.Termination{Started: true, ExitCode: &exit1, Summary: "provider returned 503 service unavailable"})}
		}), verdict.Inconclusive, verdict.TransientInfrastructure, "503"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := Judge(tt.stages)
			if j.Verdict != tt.verdict || j.FailureClass != tt.class {
				t.Errorf("Judge = %s/%s (%q), want %s/%s", j.Verdict, j.FailureClass, j.Reason, tt.verdict, tt.class)
			}
			if !strings.Contains(j.Reason, tt.reasonPart) {
				t.Errorf("reason %q does not contain %q", j.Reason, tt.reasonPart)
			}
			// A regrade judges from the Prejudged kept in grading.json: decoded, it
			// gives the same judgement of the same outcomes.
			b, err := json.Marshal(Prejudge(tt.stages))
			if err != nil {
				t.Fatal(err)
			}
			var kept Prejudged
			if err := json.Unmarshal(b, &kept); err != nil {
				t.Fatal(err)
			}
			if got := kept.With(tt.stages.Grades.Matchers); got != j {
				t.Errorf("the kept Prejudged judges %+v, Judge %+v", got, j)
			}
		})
	}
}

func TestJudgeReasonBound(t *testing.T) {
	t.Parallel()
	var ms []match.Outcome
	for range 10 {
		ms = append(ms, failedMatcher)
	}
	j := Judge(graded(PaceScripted, ms...))
	if !strings.HasSuffix(j.Reason, "; and 7 more") || strings.Count(j.Reason, "message_contains") != maxReasonMatchers {
		t.Errorf("reason = %q, want three matchers and a remainder", j.Reason)
	}
}

// TestPaceOf: fixture programs, scripted agents and CLIs offline, live CLIs and
// bring-your-own exec agents (live when they name a provider's model, scripted when
// their model is builtin: no provider to blame for a missed deadline).
func TestPaceOf(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		driver string
		source string // modelQualification source
		live   bool
		want   Pace
	}{
		{"fixture:hang", "", false, PaceFixture}, {"fixture:hang", "", true, PaceFixture},
		{"reference", "", false, PaceScripted}, {"nop", "", true, PaceScripted},
		{"exec:codex", "", false, PaceScripted}, {"exec:codex", "", true, PaceLive},
		{"exec", "qualified_runner_profile", false, PaceLive},
		{"exec", catalog.QualificationBuiltin, false, PaceScripted}, {"exec", catalog.QualificationBuiltin, true, PaceScripted},
	} {
		p := &catalog.Profile{Driver: driver.MustParse(tt.driver), ModelQualification: catalog.Qualification{Source: tt.source}}
		if got := PaceOf(p, tt.live); got != tt.want {
			t.Errorf("PaceOf(%s, source %q, live %v) = %s, want %s", tt.driver, tt.source, tt.live, got, tt.want)
		}
	}
}

func first[A, B any](a A, _ B) A { return a }
