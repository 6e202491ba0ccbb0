package attempt

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/verdict"
	"github.com/agentproof/agentproof/worker"
	"github.com/agentproof/agentproof/workspace"
)

// ReasonVerifierTampered starts the reason of an attempt whose agent changed a file
// its verifier depends on (a protected path, catalog.Verify.Protect): the candidate's
// fault, the files named.
const ReasonVerifierTampered = "verifier_tampered"

// VerifyFile is the evidence file of the verify stage: the integrity check and every
// step's record.
const VerifyFile = "verify.json"

// verifierPATH is the PATH a verifier step gets (and its program is looked up on).
const verifierPATH = "/usr/local/bin:/usr/bin:/bin"

// verifierOutputBytes bounds the output of one verifier step (stdout and stderr, 1 MiB).
const verifierOutputBytes = 1 << 20

// Verification is what the verify stage returns: the steps as observed (what a command
// matcher grades; Ran false when the case has no verifier or none was run), the
// protected files the agent changed (Tampered: "path modified|added|removed", sorted;
// no step runs then), and the harness fault that kept a step from running or
// completing (a program not found, no network namespace, the harness's kill), or nil.
type Verification struct {
	Ran      bool
	Steps    []match.VerifierRun
	Records  []stepRecord
	Tampered []string
	Fault    *verdict.Fault
}

// stepRecord is one step as verify.json records it.
type stepRecord struct {
	Step       string            `json:"step"`
	Argv       []string          `json:"argv"`
	Network    bool              `json:"network"`
	TimeoutMs  int               `json:"timeoutMs"`
	DurationMs int64             `json:"durationMs"`
	ExitCode   *int              `json:"exitCode,omitempty"`
	Signal     string            `json:"signal,omitempty"`
	TimedOut   bool              `json:"timedOut,omitempty"`
	Output     int64             `json:"outputBytes"`
	Report     *match.TestCounts `json:"report,omitempty"`
	ReportErr  string            `json:"reportProblem,omitempty"`
}

// verify runs the case's verifier after the agent's last turn and after its runs'
// processes ended (the observe stage waited for them): it checks the protected paths
// against the digests taken before the agent started (p.protected), then runs each
// step in the workspace as a process tree of its own (its own marker, an explicit
// environment with a fresh HOME, no network unless the step declares it, its own
// deadline), and keeps each step's output and report as evidence.
func (x *LocalExecutor) verify(ctx context.Context, a *attempt, p *Provisioned, secrets *redact.Set) Verification {
	vf := a.plan.Cell.Case.Verify
	if vf == nil {
		return Verification{}
	}
	var v Verification
	defer func() { writeJSON(a.ev, secrets, VerifyFile, verifyDocument(v)) }()
	x.keepFinal(ctx, a, p.Workspace, vf.FinalWorkspaceBytes, secrets)
	now, err := protectedState(p.Workspace, vf.Protect)
	if err != nil {
		v.Fault = verdict.HarnessFault(fmt.Errorf("verifier integrity: hashing the protected paths again: %w", err), false)
		return v
	}
	if v.Tampered = changedPaths(p.protected, now); len(v.Tampered) > 0 {
		a.log.note("verifier not run: the agent changed protected files: %s", strings.Join(v.Tampered, ", "))
		return v
	}
	v = x.runSteps(ctx, a, p, vf.Steps, secrets)
	return v
}

// runSteps runs the verifier's steps in order in p.Workspace (a fresh HOME below
// p.Root), stopping at the first harness fault.
func (x *LocalExecutor) runSteps(ctx context.Context, a *attempt, p *Provisioned, steps []catalog.VerifyStep, secrets *redact.Set) Verification {
	var v Verification
	home := filepath.Join(p.Root, "verify-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		v.Fault = verdict.HarnessFault(fmt.Errorf("verifier home: %w", err), true)
		return v
	}
	v.Ran = true
	for _, st := range steps {
		run, rec, fault := x.runStep(ctx, a, p, st, home, secrets)
		v.Steps, v.Records = append(v.Steps, run), append(v.Records, rec)
		if fault != nil {
			v.Fault = fault
			return v
		}
	}
	return v
}

// keepFinal keeps the workspace as the agent left it as evidence (workspace.FinalFile,
// bounded by the case's bound when it declares one, else FinalWorkspaceBytes), so
// that a regrade can run a verifier again against a fresh copy of it; a workspace it
// cannot read is noted in the flow log (a regrade of the verifier is then
// inconclusive, naming the missing file).
func (x *LocalExecutor) keepFinal(ctx context.Context, a *attempt, ws string, caseBound int64, secrets *redact.Set) {
	bound := x.FinalWorkspaceBytes
	if caseBound > 0 {
		bound = caseBound
	}
	f, err := workspace.TakeFinal(ctx, ws, bound)
	if err != nil {
		a.log.note("the final workspace was not kept: %v", err)
		return
	}
	if f.Truncated {
		a.log.note("the final workspace kept is truncated: %s", f.Note)
	}
	writeJSON(a.ev, secrets, workspace.FinalFile, f)
}

// runStep runs one verifier step and reads its report.
func (x *LocalExecutor) runStep(ctx context.Context, a *attempt, p *Provisioned, st catalog.VerifyStep, home string, secrets *redact.Set) (match.VerifierRun, stepRecord, *verdict.Fault) {
	run := match.VerifierRun{Step: st.ID}
	rec := stepRecord{Step: st.ID, Argv: st.Command, Network: st.Network, TimeoutMs: st.Timeout()}
	prog, args, err := verifierCommand(p, st.Command)
	if err != nil {
		return run, rec, verdict.HarnessFault(fmt.Errorf("verifier step %s cannot start: %w", st.ID, err), false)
	}
	spec := worker.Spec{
		Path: prog, Args: args, Dir: p.Workspace, NullStdin: true, Marker: worker.NewMarker(),
		Env:     []string{"PATH=" + verifierPATH, "HOME=" + home, "TMPDIR=" + home, "LANG=C.UTF-8", "CI=true"},
		Timeout: time.Duration(st.Timeout()) * time.Millisecond, MaxOutputBytes: verifierOutputBytes,
	}
	a.log.note("verifier step %s started: %s", st.ID, strings.Join(st.Command, " "))
	o, fault := x.superviseStep(ctx, p, st, spec)
	if fault != nil {
		return run, rec, fault
	}
	rec.DurationMs, rec.ExitCode, rec.Signal, rec.TimedOut, rec.Output = o.Duration.Milliseconds(), o.ExitCode, o.Signal, o.TimedOut, o.OutputBytes
	a.ev.Write(secrets, "logs/verify/"+st.ID+".stdout.log", o.Output.Stdout(), false)
	a.ev.Write(secrets, "logs/verify/"+st.ID+".stderr.log", o.Output.Stderr(), false)
	if fault := stepFault(st.ID, o, ctx.Err()); fault != nil {
		a.log.note("verifier step %s: %v", st.ID, fault)
		return run, rec, fault
	}
	run.Started, run.ExitCode, run.TimedOut = true, o.ExitCode, o.TimedOut || o.OutputExceeded
	run.Output = string(o.Output.Stdout()) + string(o.Output.Stderr())
	if st.Report != nil {
		run.Report, run.ReportProblem = readReport(a, p.Workspace, st, secrets)
		rec.Report, rec.ReportErr = run.Report, run.ReportProblem
	}
	a.log.note("verifier step %s ended: exit %s, %d ms", st.ID, exitText(o), rec.DurationMs)
	return run, rec, nil
}

// verifierCommand is a step's program and argv: in a container lease the image's own
// program, found by the image's /bin/sh on the step's PATH (the host's programs are
// not the image's); elsewhere the host's, found on the verifier's PATH (lookVerifier).
func verifierCommand(p *Provisioned, command []string) (string, []string, error) {
	if p.Lease != nil && p.Lease.lease.Provider == environment.ProviderContainer {
		return "/bin/sh", append([]string{"sh", "-c", `exec "$0" "$@"`}, command...), nil
	}
	prog, err := lookVerifier(command[0])
	if err != nil {
		return "", nil, err
	}
	return prog, append([]string{prog}, command[1:]...), nil
}

// superviseStep runs a step's process: in the cell's sandbox or container lease when it has one
// (the provider's Launch: the lease's namespaces, limits and network allowlist; HOME
// and TMPDIR its fresh /tmp), otherwise on this machine, in a network namespace of its
// own unless the step declares network. An incomplete account of a sandboxed step is
// the harness's fault.
func (x *LocalExecutor) superviseStep(ctx context.Context, p *Provisioned, st catalog.VerifyStep, spec worker.Spec) (worker.Outcome, *verdict.Fault) {
	if p.Lease != nil {
		spec.Env = []string{"PATH=" + verifierPATH, "HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8", "CI=true"}
		l, err := p.Lease.provider.Launch(ctx, p.Lease.lease, environment.LaunchRequest{Spec: spec})
		if err != nil {
			return worker.Outcome{}, verdict.HarnessFault(fmt.Errorf("verifier step %s cannot start in the lease: %w", st.ID, err), false)
		}
		o, err := worker.Supervise(ctx, l.Spec())
		settled := l.Settle(o)
		if err != nil {
			return o, verdict.HarnessFault(fmt.Errorf("verifier step %s: %w", st.ID, err), false)
		}
		if len(settled.Problems) > 0 {
			return o, verdict.HarnessFault(fmt.Errorf("verifier step %s: the lease's account of it is incomplete: %s", st.ID, strings.Join(settled.Problems, "; ")), true)
		}
		return settled.Outcome, nil
	}
	if !st.Network {
		wrap, err := x.netns.argv()
		if err != nil {
			return worker.Outcome{}, verdict.HarnessFault(fmt.Errorf("verifier step %s cannot start without the network (declare network: true to let it reach the network): %w", st.ID, err), false)
		}
		spec.Path, spec.Args = wrap[0], append(wrap, spec.Args...)
	}
	o, err := worker.Supervise(ctx, spec)
	if err != nil {
		return o, verdict.HarnessFault(fmt.Errorf("verifier step %s: %w", st.ID, err), false)
	}
	return o, nil
}

// stepFault is the harness fault of a step's outcome, or nil when the step ran to an
// observed end (an exit, a signal of its own, or its own deadline or output bound,
// which the candidate's code may cause). A step that did not start, whose collection
// is incomplete, or that the harness stopped (the attempt was interrupted: ctxErr) is
// never the candidate's.
func stepFault(id string, o worker.Outcome, ctxErr error) *verdict.Fault {
	switch {
	case !o.Started:
		why := o.SpawnError
		if why == nil {
			why = o.Refused
		}
		return verdict.HarnessFault(fmt.Errorf("verifier step %s did not start: %v", id, why), false)
	case o.Aborted || ctxErr != nil:
		return verdict.HarnessFault(fmt.Errorf("verifier step %s was killed by the harness (the attempt was stopped)", id), true)
	case o.CollectorError != "":
		return verdict.HarnessFault(fmt.Errorf("verifier step %s: its observation is incomplete: %s", id, o.CollectorError), true)
	}
	return nil
}

func exitText(o worker.Outcome) string {
	switch {
	case o.ExitCode != nil:
		return fmt.Sprint(*o.ExitCode)
	case o.TimedOut:
		return "none (its deadline stopped it)"
	case o.Signal != "":
		return "none (" + o.Signal + ")"
	}
	return "none"
}

// readReport reads a step's test report from the workspace (through an os.Root: a link
// out of the workspace is refused) and counts it; the raw report is kept as evidence.
func readReport(a *attempt, ws string, st catalog.VerifyStep, secrets *redact.Set) (*match.TestCounts, string) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, err.Error()
	}
	defer root.Close()
	f, err := root.Open(filepath.FromSlash(st.Report.Path))
	if err != nil {
		return nil, fmt.Sprintf("report %s: %v", st.Report.Path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, match.MaxTestReportBytes+1))
	if err != nil {
		return nil, fmt.Sprintf("report %s: %v", st.Report.Path, err)
	}
	a.ev.Write(secrets, "logs/verify/"+st.ID+".report.txt", data, false)
	c, err := match.ParseTestReport(st.Report.Format, data)
	if err != nil {
		return nil, fmt.Sprintf("report %s: %v", st.Report.Path, err)
	}
	return &c, ""
}

// lookVerifier resolves a step's program: an absolute path as given, else the first
// executable regular file of that name on verifierPATH.
func lookVerifier(name string) (string, error) {
	if filepath.IsAbs(name) {
		return name, executable(name)
	}
	if strings.Contains(name, "/") {
		return "", fmt.Errorf("program %q must be a bare name (looked up on %s) or an absolute path", name, verifierPATH)
	}
	for _, dir := range filepath.SplitList(verifierPATH) {
		p := filepath.Join(dir, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("program %q is not on the verifier's PATH (%s)", name, verifierPATH)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

// netns makes a verifier step's network namespace with util-linux's unshare: as root
// `unshare --net`, otherwise `unshare --map-current-user --net` (a user namespace that
// keeps the user's own uid). It is probed once per executor: a machine where it does
// not work makes every step without network inconclusive, naming why.
type netns struct {
	once sync.Once
	wrap []string
	err  error
}

func (n *netns) argv() ([]string, error) {
	n.once.Do(func() {
		unshare, err := lookVerifier("unshare")
		if err != nil {
			n.err = fmt.Errorf("util-linux's unshare is needed: %w", err)
			return
		}
		wrap := []string{unshare, "--net", "--"}
		if os.Geteuid() != 0 {
			wrap = []string{unshare, "--map-current-user", "--net", "--"}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, wrap[0], append(wrap[1:], "/bin/true")...).CombinedOutput()
		if err != nil {
			n.err = fmt.Errorf("%s: %v: %s", strings.Join(wrap[:len(wrap)-1], " "), err, strings.TrimSpace(string(out)))
			return
		}
		n.wrap = wrap
	})
	return append([]string(nil), n.wrap...), n.err
}

// verifyDocument is verify.json: {schema, protectedChanged, steps}.
func verifyDocument(v Verification) any {
	return struct {
		Schema   string       `json:"schema"`
		Tampered []string     `json:"protectedChanged"`
		Steps    []stepRecord `json:"steps"`
	}{"agentproof.verify/v1", append([]string{}, v.Tampered...), append([]stepRecord{}, v.Records...)}
}
