package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentproof/agentproof/evidence"
)

// Guarded path: one fixture run under an Attempt fence, in a
// provisioned workspace, admitted by the gate, with the execution pinned by digest.

// Guard is what a guarded run runs under.
//
//   - Fence: the Attempt fence's identity (ParseFenceIdentity).
//   - Hold: the caller's live controller hold on that fence (Hold); its identity must
//     equal Fence exactly. The worker checks it and never releases it: the caller keeps it
//     for the whole call and through its own report.
//   - Workspace: a ref from ProvisionWorkspace for the same run, epoch, worker and nonce.
//   - ExecutionDigest: the pinned ExecutionManifest digest ("sha256:" + 64 hex).
type Guard struct {
	Fence           FenceIdentity
	Hold            *FenceHold
	Workspace       WorkspaceRef
	ExecutionDigest string
}

// GuardError lists every problem of an invalid Guard. RunGuarded returns it before anything is created or touched.
type GuardError struct{ Problems []string }

func (e *GuardError) Error() string { return "invalid guard: " + strings.Join(e.Problems, "; ") }

// Guarded result status and not-started reasons, besides
// StatusObserved, StatusStorageFailed, StatusNotStarted, ReasonAborted and
// ReasonSetupFailed.
const (
	StatusOwnershipLost = "ownership-lost"
	ReasonOwnershipLost = "ownership-lost"
	ReasonDrift         = "drift"
)

// GuardedRunResult is the outcome of RunGuarded, one of:
//
//   - "observed" or "storage-failed", as for Result;
//   - "not-started" with Reason "aborted", "setup-failed", "ownership-lost" or "drift"
//     and a Message: no process was spawned and nothing was stored;
//   - "ownership-lost": a process ran but the controller hold was found lost after it;
//     Message says how, Termination is set, and EvidenceID is the id of the one record
//     whose write was already in flight when the hold ended, or "" when nothing was
//     stored (the check after the exit found the hold lost, so no write started).
//
// Its fields are Result's, so the two convert into each other.
type GuardedRunResult Result

// parseGuard validates g against the validated request.
func parseGuard(req Request, g Guard) (Guard, error) {
	var p []string
	fence, err := ParseFenceIdentity(g.Fence)
	var ferr *FenceError
	if errors.As(err, &ferr) {
		for _, x := range ferr.Problems {
			p = append(p, "fence: "+x)
		}
	}
	holdID, herr := ValidatedHoldIdentity(g.Hold)
	if errors.As(herr, &ferr) {
		for _, x := range ferr.Problems {
			p = append(p, "hold: "+x)
		}
	} else if err == nil && holdID != fence {
		p = append(p, fmt.Sprintf("the hold is for attempt %s nonce %s, not the fence's identity (a relabelled identity is refused)", clipText(holdID.AttemptID, 64), holdID.Nonce))
	}
	ref, werr := ParseWorkspaceRef(g.Workspace)
	var wserr *WorkspaceError
	if errors.As(werr, &wserr) {
		for _, x := range wserr.Problems {
			p = append(p, "workspace: "+x)
		}
	} else if err == nil && (ref.RunID != fence.RunID || ref.Epoch != fence.Epoch || ref.Worker != fence.Worker || ref.Nonce != fence.Nonce) {
		p = append(p, "workspace: the ref does not match the fence's run, epoch, worker and nonce")
	}
	if !sha256Pattern().MatchString(g.ExecutionDigest) {
		p = append(p, fmt.Sprintf("executionDigest %q must be sha256: and 64 lower-case hex characters", clipText(g.ExecutionDigest, 80)))
	}
	if err == nil && (req.Pins.RunID != fence.RunID || req.Pins.Epoch != fence.Epoch || req.Pins.AttemptID != fence.AttemptID) {
		p = append(p, fmt.Sprintf("pins must name the fence's runId %q, epoch %d and attemptId %q", clipText(fence.RunID, 64), fence.Epoch, clipText(fence.AttemptID, 64)))
	}
	if len(p) > 0 {
		return Guard{}, &GuardError{Problems: p}
	}
	return Guard{Fence: fence, Hold: g.Hold, Workspace: ref, ExecutionDigest: g.ExecutionDigest}, nil
}

// launchRefusal is why the launch window started nothing.
type launchRefusal struct{ reason, message string }

func (r *launchRefusal) Error() string { return r.reason + ": " + r.message }

// RunGuarded runs one fixture under an Attempt fence. An invalid
// request (Pins.Collector must be GuardedFixtureCollector and the pins must name the
// fence's run, epoch and attempt), an invalid guard or a nil ctx returns a *RequestError
// or *GuardError before anything is created or touched; every runtime outcome is a
// GuardedRunResult with a nil error.
//
// Order: the controller hold is checked at call start; the
// program is re-hashed and a digest other than Guard.ExecutionDigest returns not-started
// / drift; then, with no blocking call, lock release or goroutine hand-off before the
// fork (Spec.BeforeStart), the workspace's identity and emptiness, the dedicated fence
// directory, the executable's unchanged stamp and the hold are checked once more. The
// child runs `fixture-child --gate <fence-dir> <fixture> <lifetime-ms>` in the
// workspace with ChildEnvironment() plus GateEnv only, and the control pipe as fd 3.
// After the exit the hold is checked before disposal and storage (a lost hold: no
// removal, no write, status ownership-lost), DisposeWorkspace checks it again before it
// removes anything, one record is stored, and the hold is checked before returning.
func (w *Worker) RunGuarded(ctx context.Context, req Request, g Guard) (GuardedRunResult, error) {
	if ctx == nil {
		return GuardedRunResult{}, &RequestError{Problems: []string{"context must not be nil"}}
	}
	req, err := req.validate(GuardedFixtureCollector) // validated and copied first
	if err != nil {
		return GuardedRunResult{}, err
	}
	if g, err = parseGuard(req, g); err != nil {
		return GuardedRunResult{}, err
	}
	fence, hold, ref := g.Fence, g.Hold, g.Workspace
	if problem := ControllerHoldProblem(hold); problem != "" { // check 1: call start
		return guardedNotStarted(ReasonOwnershipLost, problem), nil
	}
	if ctx.Err() != nil {
		return guardedNotStarted(ReasonAborted, "aborted before the process started"), nil
	}
	manifest, stamp, err := manifestFor(w.program)
	if err != nil {
		return guardedNotStarted(ReasonSetupFailed, "execution manifest: "+err.Error()), nil
	}
	if manifest.Digest != g.ExecutionDigest { // drift: refuse to launch
		return guardedNotStarted(ReasonDrift, fmt.Sprintf("the fixture program's execution digest %s differs from the pinned %s", manifest.Digest, g.ExecutionDigest)), nil
	}
	label := string(fence.label())
	ctrlR, ctrlW, err := os.Pipe()
	if err != nil {
		return guardedNotStarted(ReasonSetupFailed, "creating the control pipe: "+err.Error()), nil
	}
	control := readControl(ctrlR)
	lifetime := min(req.TimeoutMs+WatchdogMarginMS, MaxChildLifetimeMS)
	out, err := Supervise(ctx, Spec{
		Path:           w.program,
		Args:           []string{"agentproof", "fixture-child", GateFlag, filepath.Dir(fence.Path), req.Fixture, strconv.FormatInt(lifetime, 10)},
		Env:            append(ChildEnvironment(), GateEnv+"="+label),
		Dir:            ref.Path,
		Timeout:        time.Duration(req.TimeoutMs) * time.Millisecond,
		MaxOutputBytes: req.MaxOutputBytes,
		ExtraFiles:     []*os.File{ctrlW},
		BeforeStart:    launchWindow(g, w.program, stamp),
	})
	_ = ctrlW.Close() // the child holds its own copy
	if err != nil || !out.Started {
		_ = ctrlR.Close()
		<-control.done
		return spawnRefused(out, err), nil
	}
	open := false
	select {
	case <-control.done:
	case <-time.After(CloseGrace):
		open = true // a descendant kept fd 3: stop reading
	}
	_ = ctrlR.Close()
	<-control.done
	gateProblem := controlVerdict(control.data, control.overflow, open, fence.Nonce)

	why := fmt.Sprintf("exited=%t stdioClosed=%t", out.Exited, out.StdioClosed)
	if problem := ControllerHoldProblem(hold); problem != "" { // check 3: after the exit
		return guardedOwnershipLost(out, problem, quarantine(ref.Path, "ownership lost, not removed: "+problem), ""), nil
	}
	ws, lost := DisposeWorkspace(ref, hold, out.Exited && out.StdioClosed, why)
	if lost {
		return guardedOwnershipLost(out, strings.TrimPrefix(ws.Reason, "ownership lost, not removed: "), ws, ""), nil
	}
	return w.storeGuarded(req, hold, out, ws, gateProblem), nil
}

// guardedNotStarted is the result of a guarded run that started nothing, for reason (one of
// the Reason constants) with message msg (clipped to 1024 runes).
func guardedNotStarted(reason, msg string) GuardedRunResult {
	return GuardedRunResult{Status: StatusNotStarted, Scope: Scope, Reason: reason, Message: clipText(msg, 1024)}
}

// guardedOwnershipLost is the result of a guarded run whose controller hold ended (problem
// says how) after the process out ran: workspace disposition ws, and the id of
// evidence stored before the loss was seen, or "".
func guardedOwnershipLost(out Outcome, problem string, ws WorkspaceDisposition, id string) GuardedRunResult {
	term := summarize(out, ws)
	return GuardedRunResult{Status: StatusOwnershipLost, Scope: Scope, EvidenceID: id, Termination: &term,
		Message: "controller ownership lost: " + problem}
}

// launchWindow returns the guarded run's Spec.BeforeStart: synchronous checks only
// (nothing waits in the launch window) of the workspace's identity and emptiness, the dedicated fence
// directory, program's unchanged stamp and the controller hold, right before the
// spawn. A failed check returns a *launchRefusal with its reason (setup-failed,
// drift or ownership-lost).
func launchWindow(g Guard, program string, stamp exeStamp) func() error {
	fence, hold, ref := g.Fence, g.Hold, g.Workspace
	return func() error {
		if err := CheckWorkspace(ref); err != nil {
			return &launchRefusal{ReasonSetupFailed, err.Error()}
		}
		empty, first, err := IsWorkspaceEmpty(ref)
		if err != nil {
			return &launchRefusal{ReasonSetupFailed, err.Error()}
		}
		if !empty {
			return &launchRefusal{ReasonSetupFailed, fmt.Sprintf("workspace %s is not empty (first entry %q); left as it is", ref.Path, first)}
		}
		if err := checkDedicatedFenceDirectory(fence); err != nil {
			return &launchRefusal{ReasonSetupFailed, err.Error()}
		}
		if err := checkExecutableUnchanged(program, stamp); err != nil {
			return &launchRefusal{ReasonDrift, err.Error()}
		}
		if problem := ControllerHoldProblem(hold); problem != "" { // check 2: right before the spawn
			return &launchRefusal{ReasonOwnershipLost, problem}
		}
		return nil
	}
}

// spawnRefused is the not-started result of a guarded run whose process did not
// start: Supervise's spec error (setup-failed), the launch window's refusal (its
// reason), an abort before the start, or a spawn failure (setup-failed).
func spawnRefused(out Outcome, err error) GuardedRunResult {
	var refusal *launchRefusal
	switch {
	case err != nil:
		return guardedNotStarted(ReasonSetupFailed, err.Error())
	case errors.As(out.Refused, &refusal):
		return guardedNotStarted(refusal.reason, refusal.message)
	case out.Aborted:
		return guardedNotStarted(ReasonAborted, "aborted before the process started")
	default:
		return guardedNotStarted(ReasonSetupFailed, "spawn-failed: "+clipText(fmt.Sprint(out.SpawnError), 256))
	}
}

// storeGuarded stores the evidence of a guarded run whose process out ran and whose
// workspace was disposed as ws: the observation (with the control gate's problem, if
// any, in its collector error) and the stdout/stderr body. The hold is checked once
// more after the write (check 4): a lost hold is ownership-lost with the id written,
// if any. Otherwise the result is observed with the evidence id, or storage-failed.
func (w *Worker) storeGuarded(req Request, hold *FenceHold, out Outcome, ws WorkspaceDisposition, gateProblem string) GuardedRunResult {
	term := summarize(out, ws)
	obs := observation(req, out, ws)
	if gateProblem != "" {
		msg := gateProblem
		if obs.CollectorError != nil {
			msg += "; " + *obs.CollectorError
		}
		msg = clipText(msg, evidence.MaxCollectorErrorLength)
		obs.CollectorError = &msg
	}
	meta := evidence.Metadata{
		Pins:        req.Pins,
		Check:       req.Check,
		CollectedAt: time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
		Observation: obs,
	}
	// Control records went to the control pipe only: the body holds stdout and stderr.
	body := evidence.LocalFixtureBody{Fixture: req.Fixture, Stdout: out.Output.Stdout(), Stderr: out.Output.Stderr()}
	if out.OutputExceeded {
		body.TruncatedAt = req.MaxOutputBytes
	}
	res := GuardedRunResult{Scope: Scope, Metadata: &meta, Termination: &term, Body: body.Format()}
	id, putErr := w.store.Put(meta, res.Body)
	if problem := ControllerHoldProblem(hold); problem != "" { // check 4: before return
		// The write was already in flight when the hold ended: report its id, if any.
		r := guardedOwnershipLost(out, problem, ws, id)
		r.Metadata, r.Body = res.Metadata, res.Body
		return r
	}
	if putErr != nil {
		res.Status, res.Message = StatusStorageFailed, clipText(putErr.Error(), 1024)
		return res
	}
	res.Status, res.EvidenceID = StatusObserved, id
	return res
}
