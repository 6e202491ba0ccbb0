package attempt

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/verdict"
)

// Pace says who sets an agent's pace, which decides who a missed deadline, a hung
// process or a flood of output is blamed on (docs/ARCHITECTURE.md "Honest blame").
type Pace int

// The paces.
const (
	// PaceScripted: a built-in agent, or a real CLI against the attempt's scripted
	// model. Both are deterministic and offline: no provider can be blamed, so a
	// deadline, a hang or a flood is the candidate's (failed, candidate_failure, the
	// deadline named).
	PaceScripted Pace = iota
	// PaceLive: a real CLI against its live provider (`run --live`), or a bring-your-own
	// exec agent whose model agentproof cannot know: a deadline, a hang or a flood is
	// provider variance (inconclusive, retried once: the model, not the candidate, set
	// the pace). An exec agent that declares no model of a provider (its
	// modelQualification source is builtin) has no provider to blame: it is scripted.
	PaceLive
	// PaceFixture: a fixture program of package worker. Its timeout or output overflow
	// is an incomplete observation (never reported as a clean exit), with the
	// classes the process-control calibration documents: a timeout is provider
	// variance, an overflow a collector error (permanent infrastructure); inconclusive
	// either way.
	PaceFixture
)

// String names the pace.
func (p Pace) String() string {
	switch p {
	case PaceScripted:
		return "scripted"
	case PaceLive:
		return "live"
	}
	return "fixture"
}

// PaceOf is the pace of a profile's agent in a campaign run live or not.
func PaceOf(p *catalog.Profile, live bool) Pace {
	d := p.Driver
	_, isCLI := d.CLI()
	switch {
	case d.Kind == driver.KindFixture:
		return PaceFixture
	case d.Kind == driver.KindExec && p.ModelQualification.Source == catalog.QualificationBuiltin:
		return PaceScripted
	case isCLI && live, d.Kind == driver.KindExec:
		return PaceLive
	}
	return PaceScripted
}

// paceFault blames a missed deadline (what: "the turn 2 deadline (600000 ms)", "run
// r-1's process deadline") on whoever the pace says; flood marks an output overflow
// rather than a deadline.
func paceFault(p Pace, what string, flood bool) *verdict.Fault {
	err := errors.New("missed " + what)
	if flood {
		err = errors.New(what)
	}
	switch p {
	case PaceScripted:
		return verdict.CandidateFault(fmt.Errorf("%w (the agent is deterministic and offline: no provider to blame)", err))
	case PaceLive:
		return verdict.ProviderFault(err, verdict.ProviderVariance)
	}
	if flood {
		return verdict.HarnessFault(fmt.Errorf("collector error: %w", err), false)
	}
	return verdict.ProviderFault(err, verdict.ProviderVariance)
}

// runFaults are the faults the heartbeat records of an attempt's runs show, in run
// order, each blamed where it belongs: a process that was never started is the
// harness's (the runner could not launch it); a resource limit of the lease the host
// saw the agent hit is the candidate's, the limit named; a launch the environment
// could not fully account for is the harness's; a timeout or an output overflow is
// blamed by pace (paceFault; returned in paced); another collector error (an
// unconfirmed exit, unclosed output) is the harness's (the evidence is incomplete); a
// real CLI that exited non-zero is classified from its own words (cliFault). A printed
// secret is not a fault here: Judge counts it as a leak.
func runFaults(p Pace, runs []api.HeartbeatRun) (out, paced []*verdict.Fault) {
	for _, r := range runs {
		t := r.Termination
		switch {
		case t == nil:
		case !t.Started:
			out = append(out, verdict.HarnessFault(fmt.Errorf("the agent process of run %s was not started: %s", r.RunID, t.Summary), false))
		case len(t.Limits) > 0:
			// The host saw the agent exceed its pinned shape (an OOM kill, refused forks,
			// a full disk): the candidate's, whatever followed, with the limit named.
			var hits []string
			for _, h := range t.Limits {
				hits = append(hits, h.Detail)
			}
			out = append(out, verdict.CandidateFault(fmt.Errorf("run %s exceeded its environment's resource limits: %s", r.RunID, strings.Join(hits, "; "))))
		case len(t.EnvironmentProblems) > 0:
			out = append(out, verdict.HarnessFault(fmt.Errorf("the environment's account of run %s is incomplete: %s", r.RunID, strings.Join(t.EnvironmentProblems, "; ")), false))
		case t.TimedOut:
			paced = append(paced, paceFault(p, fmt.Sprintf("the run %s process deadline (it ran %d ms)", r.RunID, t.DurationMs), false))
		case t.OutputExceeded:
			paced = append(paced, paceFault(p, fmt.Sprintf("run %s exceeded its output bound (%d bytes)", r.RunID, t.OutputBytes), true))
		case t.CollectorError != "":
			out = append(out, verdict.HarnessFault(fmt.Errorf("collector error of run %s: %s", r.RunID, t.CollectorError), false))
		case r.Status == controlplane.RunFailed && t.ExitCode != nil && *t.ExitCode != 0:
			if _, isCLI := r.Driver.CLI(); isCLI {
				out = append(out, cliFault(p, fmt.Sprintf("run %s failed: %s", r.RunID, t.Summary)))
			}
		}
	}
	return out, paced
}

// cliFault classifies a real CLI's failure from its own words (agent text; the only
// text classification besides a live provider's, ClassifyText): a stream the CLI reports
// closed before completion is a scripted-model defect (harness, permanent) — or provider variance live —, the agentproof MCP server not starting
// is the harness's (transient), an idle model stream is the model's (the scripted
// model's: harness, transient; a live provider's: provider variance); any other
// non-zero exit is the candidate's, unless ClassifyText's ordered rules say otherwise
// for a live provider's words.
func cliFault(p Pace, msg string) *verdict.Fault {
	low := strings.ToLower(msg)
	switch {
	case strings.Contains(low, "stream disconnected before completion") || strings.Contains(low, "stream closed before"):
		if p == PaceLive {
			return verdict.ProviderFault(errors.New("the CLI's model stream closed before completion: "+msg), verdict.ProviderVariance)
		}
		return verdict.HarnessFault(errors.New("the CLI's model stream closed before completion (scripted model defect): "+msg), false)
	case strings.Contains(low, "mcp servers failed to initialize") || strings.Contains(low, "mcp server startup failed"):
		return verdict.HarnessFault(errors.New("the agentproof MCP server did not start for the CLI: "+msg), true)
	case strings.Contains(low, "idle timeout"):
		err := errors.New("the CLI's model stream hit its idle timeout: " + msg)
		if p == PaceLive {
			return verdict.ProviderFault(err, verdict.ProviderVariance)
		}
		return verdict.HarnessFault(fmt.Errorf("%w (the scripted model was idle)", err), true)
	}
	if p == PaceLive {
		if c := ClassifyText(msg); c != verdict.CandidateFailure {
			return verdict.ProviderFault(errors.New(msg), c)
		}
	}
	return verdict.CandidateFault(errors.New(msg))
}
