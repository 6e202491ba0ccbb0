package attempt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/sandbox"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/worker"
)

// Teardown is what the teardown stage returns: the cleanup problems (a fixture that
// did not tear down, processes of the server's group that outlived it, a run's agent
// that left processes outside its process group, processes the attempt's marker sweep
// killed after the server stopped, a temp root that could not be removed), the leaks
// found (anywhere in the attempt's temp root, in the evidence written), the required
// evidence missing (only for attempts that reached grading), and whether cleanup was
// confirmed (teardown ran and found no problem). A server that had to be killed is a
// harness note in the flow log, not a problem.
type Teardown struct {
	Problems  []string
	Leaks     []string
	Missing   []string
	Confirmed bool
	// ServerDied says how the attempt's control-plane server ended when it exited
	// before teardown stopped it ("" when teardown stopped it): a harness fault, and
	// what followed from it (fixture teardown refused by a server that is gone) is not
	// the candidate's.
	ServerDied string
	// Leases are the records of the attempt's environment leases after their cleanup
	// (a sandbox cell's one lease; none for a local cell).
	Leases []environment.LeaseRecord
	// Trajectories are the ATIF trajectories written of the attempt's runs
	// (exportTrajectories).
	Trajectories []result.TrajectoryRef
	// Secrets is the set teardown scanned and wrote with: the attempt's, and the
	// secrets of every attempt that ran beside it (heldSecrets.others).
	Secrets *redact.Set
}

// teardown tears down what the stages left, in reverse: the fixtures (fixtures.json),
// the server (its logs), the scripted model (its request log), then kills what still
// carries the attempt's process marker, writes the flow log and the agent logs, scans
// the whole temp root for leaks (a sandbox lease's disk among it) while the runs'
// trajectories are exported from the evidence, closes a sandbox lease's bridge and
// destroys the lease (an unconfirmed cleanup is a cleanup problem naming what
// remained), removes the temp root, checks the required evidence and scans the
// evidence written. It runs
// with a context that outlives a cancellation, bounded by teardownTimeout.
func (x *LocalExecutor) teardown(ctx context.Context, a *attempt, s *Stages) Teardown {
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
	defer cancel()
	p := &s.Provisioned
	t := Teardown{Secrets: x.held.withOthers(s.secrets(), p.held)}
	secrets := t.Secrets
	if p.Instance != nil {
		if t.ServerDied = p.Instance.died(); t.ServerDied != "" {
			a.log.note("harness fault: %s", t.ServerDied)
		}
	}
	t.Problems, t.Leaks = stopAttempt(tctx, a, s, secrets)
	a.ev.Write(secrets, "logs/flow.log", []byte(a.log.text()), true)
	// The trajectories are made from the evidence alone (the agent logs, the model's
	// log, the state snapshot), so they are exported while the roots are scanned and
	// removed; the evidence is checked and scanned once they are written.
	// The state root is scanned and removed beside the temp root (the two are apart,
	// often on two file systems); what each finds is reported in the order of one after
	// the other.
	// The agent logs are copied from the home before anything removes it (the home may
	// live in the state root, removed below beside the temp root).
	if p.Root != "" {
		collectAgentLogs(a.ev, secrets, p.Home)
	}
	trajectories := make(chan []result.TrajectoryRef, 1)
	var state struct{ leaks, scan, remove []string }
	var wg sync.WaitGroup
	if p.StateRoot != "" {
		scan := p.Root != ""
		wg.Go(func() {
			if scan {
				state.leaks = scanClosed(secrets, p, p.StateRoot, &state.scan)
			}
			state.remove = x.removeRoot(p.StateRoot)
			_ = p.stateClaim.Release()
		})
	}
	if p.Root != "" {
		go func() { trajectories <- exportTrajectories(a.ev, secrets, s.Observation.Runs) }()
		var scan, lease []string
		leaks := scanClosed(secrets, p, p.Root, &scan)
		if p.Lease != nil { // after the workspace's scan: it lives on the lease disk
			noteWritesOutside(a, s.Observation.Runs)
			rec, problem := p.Lease.release(tctx, s.Observation.Runs)
			t.Leases = append(t.Leases, rec)
			if problem != "" {
				lease = append(lease, secrets.RedactText(problem))
			}
		}
		remove := x.removeRoot(p.Root)
		_ = p.rootClaim.Release() // removed or kept: nobody's to sweep
		wg.Wait()
		t.Leaks = slices.Concat(t.Leaks, leaks, state.leaks)
		t.Problems = slices.Concat(t.Problems, scan, state.scan, lease, remove)
	} else {
		trajectories <- nil
		wg.Wait()
	}
	t.Problems = append(t.Problems, state.remove...)
	t.Trajectories = <-trajectories
	if s.Grades.Matchers != nil {
		t.Missing = a.ev.CheckRequired()
	}
	t.Leaks = append(t.Leaks, a.ev.Leaks()...)
	t.Leaks = append(t.Leaks, scanEvidence(secrets, a.ev.Dir())...)
	t.Confirmed = len(t.Problems) == 0
	return t
}

// noteWritesOutside notes in the flow log what each sandbox run's agent left outside
// its workspace and its HOME (/tmp and /dev/shm of its lease: the launch's
// sandbox.FactWritesOutside), which its termination record holds too.
func noteWritesOutside(a *attempt, runs []api.HeartbeatRun) {
	for _, r := range runs {
		if t := r.Termination; t != nil && t.Environment[sandbox.FactWritesOutside] != "" {
			a.log.note("the agent of run %s wrote outside its workspace and HOME: %s", r.RunID, t.Environment[sandbox.FactWritesOutside])
		}
	}
}

// stopAttempt is the first half of teardown: it tears down the fixtures (fixtures.json),
// stops the server and the scripted model, stops the hostile agent's targets, finds
// the processes that escaped the runs and sweeps whatever still carries the attempt's
// marker, and destroys a login file's HOME. It returns the cleanup problems and the
// leaks found, redacted with secrets.
func stopAttempt(ctx context.Context, a *attempt, s *Stages, secrets *redact.Set) (problems, leaks []string) {
	p := &s.Provisioned
	if fx := s.Fixtures.Set; fx != nil {
		if err := fx.Teardown(ctx); err != nil {
			problems = append(problems, secrets.RedactText(err.Error()))
		}
		writeJSON(a.ev, secrets, "fixtures.json", fx.States())
	}
	if s.Fixtures.CleanupErr != "" {
		problems = append(problems, s.Fixtures.CleanupErr)
	}
	killed := false
	if p.Instance != nil {
		var stopped []string
		stopped, killed = stopServices(a, p, secrets)
		problems = append(problems, stopped...)
	}
	if note, leak := p.Hostile.stop(); note != "" {
		a.log.note("%s", note)
		if leak != "" {
			leaks = append(leaks, leak)
		}
	}
	escaped, notes := escapedOf(s.Observation.Runs, s.Flow.Killed)
	for _, n := range notes {
		a.log.note("%s", n)
	}
	problems = append(problems, escaped...)
	problems = append(problems, sweepMarker(a, p.Marker, killed, secrets)...)
	// The login file's HOME goes once no agent process can touch it, before the scans.
	if problem := destroyLoginHome(a.ev, secrets, s.Fixtures.LoginFile); problem != "" {
		problems = append(problems, problem)
	} else if s.Fixtures.LoginFile != nil {
		a.log.note("login file %s: HOME destroyed, confirmed gone", s.Fixtures.LoginFile.Credential)
	}
	return problems, leaks
}

// stopServices stops the server and the scripted model and keeps their logs; it
// returns the cleanup problems and whether the server had to be killed (then a harness
// note in the flow log, not a problem: its exit was confirmed, and the agent processes
// it may have left behind are the marker sweep's).
func stopServices(a *attempt, p *Provisioned, secrets *redact.Set) (problems []string, killed bool) {
	if p.Instance != nil {
		start := time.Now()
		current, earlier, k, err := p.Instance.stop()
		a.log.note("server stopped in %d ms", time.Since(start).Milliseconds())
		if err != nil {
			problems = append(problems, err.Error())
		}
		if killed = k; killed {
			a.log.note("harness note: the server did not stop within %s of SIGTERM and was killed (its exit confirmed)", StopGrace)
		}
		for _, log := range earlier {
			a.ev.Write(secrets, "logs/serve-before-restart.stderr.log", log, true)
		}
		a.ev.Write(secrets, "logs/serve.stderr.log", current, true)
	}
	if p.Model != nil {
		if err := p.Model.stop(a.ev, secrets); err != nil {
			problems = append(problems, err.Error())
		}
	}
	return problems, killed
}

// sweepMarker kills every process that still carries the attempt's marker after the
// server is gone (worker.SweepMarked): an agent's descendant that escaped its run's
// own sweep. Each one found is a cleanup problem (the candidate left it), except,
// after a server that had to be killed (serverKilled), the ones whose exit was
// confirmed: the server was stopped before it could stop its agents, so they are the
// harness's (a note in the flow log). A sweep that could not run is a problem
// (cleanup not confirmed).
func sweepMarker(a *attempt, marker string, serverKilled bool, secrets *redact.Set) []string {
	if marker == "" {
		return nil
	}
	found, err := worker.SweepMarked(marker, worker.SweepConfirm)
	var problems []string
	if err != nil {
		problems = append(problems, "the sweep for the attempt's escaped processes could not complete: "+secrets.RedactText(err.Error()))
	}
	for _, e := range found {
		what := fmt.Sprintf("%s (pid %d)", secrets.RedactText(e.Command), e.PID)
		switch {
		case !e.Killed:
			problems = append(problems, "an agent process outlived the server and could not be confirmed killed: "+what)
		case serverKilled:
			a.log.note("harness note: the killed server left agent process %s; killed", what)
		default:
			problems = append(problems, "an agent process escaped its run and outlived the server; killed: "+what)
		}
	}
	return problems
}

// scanClosed scans everything the agent could write inside root, the attempt's temp
// root or its state root, for every secret value, raw and encoded (redact.Set forms:
// every written file must be secret-free): the closed instance home (the agents' per-run HOME, XDG and CLI config
// directories are under it; in the state root when homes are kept apart), the
// workspace, and the rest of the temp root (tmp, artifacts, the scripted model's
// files, whatever an agent wrote there). The home's own key files are exempt. A scan that could not complete is a cleanup
// problem (appended to problems).
func scanClosed(secrets *redact.Set, p *Provisioned, root string, problems *[]string) []string {
	var leaks []string
	found, err := secrets.ScanTree(root, false)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		*problems = append(*problems, fmt.Sprintf("leak scan of the attempt's temp root could not complete: %v", secrets.RedactText(err.Error())))
	}
	for _, l := range found {
		place, rel := placeOf(p, root, l.Path)
		if place == "instance home" && ownSecretFile(p.Home, rel) {
			continue // the board token's or master key's own file
		}
		leaks = append(leaks, fmt.Sprintf("secret leak in persisted %s state at %s: %s", place, rel, l.Leak.String()))
	}
	return leaks
}

// placeOf names where a path scanned under root (slash-separated, relative to root,
// "!member" for an archive member; root is the attempt's temp root or its state root)
// lies — the instance home, the workspace or elsewhere in the root — and returns it
// relative to that place.
func placeOf(p *Provisioned, root, path string) (place, rel string) {
	for _, d := range []struct{ name, dir string }{{"instance home", p.Home}, {"workspace", p.Workspace}} {
		prefix, err := filepath.Rel(root, d.dir)
		if err != nil || prefix == ".." || strings.HasPrefix(prefix, "../") {
			continue
		}
		if r, ok := strings.CutPrefix(path, filepath.ToSlash(prefix)+"/"); ok {
			return d.name, r
		}
	}
	return "attempt temp root", path
}

// removeRoot removes the attempt's temp root (unless KeepRoot) and confirms it is gone.
func (x *LocalExecutor) removeRoot(root string) []string {
	if x.KeepRoot {
		return []string{"temp root kept for debugging: " + root}
	}
	if err := os.RemoveAll(root); err != nil {
		return []string{fmt.Sprintf("temp root could not be removed: %v", err)}
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		return []string{"temp root still exists after removal"}
	}
	return nil
}

// scanEvidence scans what the attempt wrote under its results directory.
func scanEvidence(secrets *redact.Set, dir string) []string {
	found, err := secrets.ScanTree(dir, false)
	if err != nil {
		return []string{"evidence could not be scanned: " + secrets.RedactText(err.Error())}
	}
	var leaks []string
	for _, l := range found {
		leaks = append(leaks, fmt.Sprintf("evidence %s: %s", l.Path, l.Leak.String()))
	}
	return leaks
}

// maxAgentLog bounds each agent log copied into the attempt directory, in bytes.
const maxAgentLog = 256 << 10

// collectAgentLogs copies the heartbeat runner's bounded, redacted run evidence
// (stdout, stderr and event streams per run) from the closed instance home into
// logs/agent/ through the guard, as agent content, each cut to maxAgentLog bytes.
func collectAgentLogs(ev *campaign.Evidence, secrets *redact.Set, home string) {
	base := filepath.Join(home, "heartbeat")
	_ = filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(base, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if !strings.HasSuffix(rel, ".log") && !strings.HasSuffix(rel, ".jsonl") && !strings.Contains(rel, "stdout") && !strings.Contains(rel, "stderr") {
			return nil
		}
		if b, err := readBounded(p, maxAgentLog); err == nil {
			ev.Write(secrets, "logs/agent/"+rel, b, false)
		}
		return nil
	})
}

// escapedOf describes the escaped processes the runs' terminations list: cleanup
// problems, but for a run whose agent process the flow itself killed with SIGKILL
// (killed: flow crash_retry), whose descendants outside its group could not be
// stopped by it — those the runner killed (their exit confirmed) are a harness note,
// not the candidate's problem; one whose exit is not confirmed is still a problem.
func escapedOf(runs []api.HeartbeatRun, killed []string) (out, notes []string) {
	for _, r := range runs {
		if r.Termination == nil || len(r.Termination.EscapedProcesses) == 0 {
			continue
		}
		var ps []string
		confirmed := true
		for _, e := range r.Termination.EscapedProcesses {
			state := "killed"
			if !e.Killed {
				state, confirmed = "its exit not confirmed", false
			}
			ps = append(ps, fmt.Sprintf("%s (pid %d, %s)", e.Command, e.PID, state))
		}
		if confirmed && slices.Contains(killed, r.RunID) {
			notes = append(notes, fmt.Sprintf("harness note: the agent process of run %s was killed by the flow (SIGKILL), and the runner killed the %d process(es) it left outside its process group: %s", r.RunID, len(ps), strings.Join(ps, ", ")))
			continue
		}
		out = append(out, fmt.Sprintf("the agent of run %s left %d process(es) outside its process group: %s", r.RunID, len(ps), strings.Join(ps, ", ")))
	}
	return out, notes
}
