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

// EvidenceStore is where the worker puts its one record per started process
// (*evidence.Store implements it). Put returns the record id or an error.
type EvidenceStore interface {
	Put(meta evidence.Metadata, body []byte) (string, error)
}

// Options configure a Worker.
//
//   - Store: required.
//   - WorkspaceRoot: absolute directory (≤ 4096 bytes, no NUL) under which each run
//     creates its private working directory; "" means os.TempDir(). Its existence is
//     checked at run time (a missing root is not-started / setup-failed).
//   - Program: absolute path of the agentproof binary that implements `fixture-child`;
//     "" means os.Executable(). Tests and embedders whose own binary is not agentproof
//     set it; callers of Run still never choose arguments, environment or directory.
type Options struct {
	Store         EvidenceStore
	WorkspaceRoot string
	Program       string
}

// OptionsError lists every problem of invalid Options.
type OptionsError struct{ Problems []string }

func (e *OptionsError) Error() string {
	return "invalid worker options: " + strings.Join(e.Problems, "; ")
}

// RequestError lists every problem of an invalid Request. Run returns it before anything is created or touched.
type RequestError struct{ Problems []string }

func (e *RequestError) Error() string {
	return "invalid fixture request: " + strings.Join(e.Problems, "; ")
}

// Worker is the local fixture worker (docs/fixture-worker.md). It is safe for concurrent
// use; every Run is independent.
type Worker struct {
	store   EvidenceStore
	root    string
	program string
}

// New validates opts and returns a Worker, or an *OptionsError listing every problem.
func New(opts Options) (*Worker, error) {
	var p []string
	if opts.Store == nil {
		p = append(p, "store is required")
	}
	root := opts.WorkspaceRoot
	if root == "" {
		root = os.TempDir()
	}
	p = append(p, checkPath("workspaceRoot", root)...)
	program := opts.Program
	if program == "" {
		exe, err := os.Executable()
		if err != nil {
			p = append(p, fmt.Sprintf("locating the agentproof executable: %v", err))
		}
		program = exe
	}
	if program != "" {
		p = append(p, checkPath("program", program)...)
	}
	if len(p) > 0 {
		return nil, &OptionsError{Problems: p}
	}
	return &Worker{store: opts.Store, root: filepath.Clean(root), program: program}, nil
}

func checkPath(field, path string) []string {
	var p []string
	if !filepath.IsAbs(path) {
		p = append(p, fmt.Sprintf("%s %q must be an absolute path", field, clipText(path, 64)))
	}
	if strings.ContainsRune(path, 0) {
		p = append(p, field+" must not contain NUL")
	}
	if len(path) > 4096 {
		p = append(p, fmt.Sprintf("%s is %d bytes long, more than 4096", field, len(path)))
	}
	return p
}

// Request is one fixture run.
//
//   - Fixture: one of Fixtures().
//   - Pins: validated by evidence.ParsePins; Pins.Collector must be
//     evidence.LocalFixtureCollector. Stored verbatim.
//   - Check: an evidence check name (evidence.ParseCheckName). Stored verbatim.
//   - TimeoutMs: 1..MaxTimeoutMS milliseconds. The child's own lifetime is TimeoutMs +
//     WatchdogMarginMS, so the worker's timeout acts first.
//   - MaxOutputBytes: 1..MaxOutputBytes, the combined stdout+stderr budget.
type Request struct {
	Fixture        string
	Pins           evidence.Pins
	Check          string
	TimeoutMs      int64
	MaxOutputBytes int64
}

// validate checks r for the path whose collector tag is collector and returns a copy,
// collecting every problem.
func (r Request) validate(collector string) (Request, error) {
	var p []string
	if !IsFixture(r.Fixture) {
		p = append(p, fmt.Sprintf("fixture %q must be one of %s", clipText(r.Fixture, 32), strings.Join(Fixtures(), ", ")))
	}
	var verr *evidence.ValidationError
	if err := evidence.ValidateMetadata(evidence.Metadata{Pins: r.Pins, Check: r.Check}); errors.As(err, &verr) {
		p = append(p, verr.Problems...)
	}
	if r.Pins.Collector != collector {
		p = append(p, fmt.Sprintf("pins.collector %q must be %q on this path", clipText(r.Pins.Collector, 64), collector))
	}
	if r.TimeoutMs < 1 || r.TimeoutMs > MaxTimeoutMS {
		p = append(p, fmt.Sprintf("timeoutMs %d must be between 1 and %d", r.TimeoutMs, MaxTimeoutMS))
	}
	if r.MaxOutputBytes < 1 || r.MaxOutputBytes > MaxOutputBytes {
		p = append(p, fmt.Sprintf("maxOutputBytes %d must be between 1 and %d", r.MaxOutputBytes, MaxOutputBytes))
	}
	if len(p) > 0 {
		return Request{}, &RequestError{Problems: p}
	}
	return r, nil
}

// TerminationSummary is how one fixture process ended (evidence.ProcessEnd, the same
// facts its evidence's observation records) and what became of its workspace. PID is
// diagnostic only.
type TerminationSummary struct {
	PID int `json:"pid"`
	evidence.ProcessEnd
	Workspace WorkspaceDisposition `json:"workspace"`
}

// Result statuses and not-started reasons.
const (
	StatusObserved      = "observed"
	StatusStorageFailed = "storage-failed"
	StatusNotStarted    = "not-started"
	ReasonAborted       = "aborted"
	ReasonSetupFailed   = "setup-failed"
)

// Result is the outcome of Run, one of:
//
//   - Status "observed": EvidenceID, Metadata and Termination are set;
//   - Status "storage-failed": Message, Metadata and Termination are set (no id);
//   - Status "not-started": Reason ("aborted" or "setup-failed") and Message are set;
//     no process was spawned and nothing was stored.
type Result struct {
	Status      string              `json:"status"`
	Scope       string              `json:"scope"`
	EvidenceID  string              `json:"evidenceId,omitempty"`
	Metadata    *evidence.Metadata  `json:"metadata,omitempty"`
	Termination *TerminationSummary `json:"termination,omitempty"`
	Reason      string              `json:"reason,omitempty"`
	Message     string              `json:"message,omitempty"`
	// Body is the evidence body that was (or failed to be) stored; not serialized.
	Body []byte `json:"-"`
}

// Run runs one fixture through the worker (the unguarded path). An invalid request or a
// nil ctx returns a *RequestError before anything is created; every runtime outcome is a
// Result with a nil error. A cancelled ctx before the spawn starts nothing (not-started /
// aborted); during the run it stops the process and records Aborted.
func (w *Worker) Run(ctx context.Context, req Request) (Result, error) {
	if ctx == nil {
		return Result{}, &RequestError{Problems: []string{"context must not be nil"}}
	}
	req, err := req.validate(evidence.LocalFixtureCollector) // validated and copied before anything starts
	if err != nil {
		return Result{}, err
	}
	notStarted := func(reason, msg string) (Result, error) {
		return Result{Status: StatusNotStarted, Scope: Scope, Reason: reason, Message: msg}, nil
	}
	if ctx.Err() != nil {
		return notStarted(ReasonAborted, "aborted before the process started")
	}
	dir, err := createWorkspace(w.root, workspacePrefix)
	if err != nil {
		return notStarted(ReasonSetupFailed, err.Error())
	}
	lifetime := min(req.TimeoutMs+WatchdogMarginMS, MaxChildLifetimeMS)
	out, err := Supervise(ctx, Spec{
		Path:           w.program,
		Args:           []string{"agentproof", "fixture-child", req.Fixture, strconv.FormatInt(lifetime, 10)},
		Env:            ChildEnvironment(),
		Dir:            dir,
		Timeout:        time.Duration(req.TimeoutMs) * time.Millisecond,
		MaxOutputBytes: req.MaxOutputBytes,
	})
	if err != nil || !out.Started {
		_ = os.Remove(dir) // created by us a moment ago and never used: rmdir only
		switch {
		case err != nil:
			return notStarted(ReasonSetupFailed, err.Error())
		case out.Aborted:
			return notStarted(ReasonAborted, "aborted before the process started")
		default:
			return notStarted(ReasonSetupFailed, "spawn-failed: "+clipText(out.SpawnError.Error(), 256))
		}
	}
	why := fmt.Sprintf("exited=%t stdioClosed=%t", out.Exited, out.StdioClosed)
	ws := disposeWorkspace(dir, out.Exited && out.StdioClosed, why)
	term := summarize(out, ws)
	meta := evidence.Metadata{
		Pins:        req.Pins,
		Check:       req.Check,
		CollectedAt: time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
		Observation: observation(req, out, ws),
	}
	body := evidence.LocalFixtureBody{Fixture: req.Fixture, Stdout: out.Output.Stdout(), Stderr: out.Output.Stderr()}
	if out.OutputExceeded {
		body.TruncatedAt = req.MaxOutputBytes
	}
	res := Result{Scope: Scope, Metadata: &meta, Termination: &term, Body: body.Format()}
	id, err := w.store.Put(meta, res.Body)
	if err != nil {
		res.Status, res.Message = StatusStorageFailed, clipText(err.Error(), 1024)
		return res, nil
	}
	res.Status, res.EvidenceID = StatusObserved, id
	return res, nil
}

func summarize(o Outcome, ws WorkspaceDisposition) TerminationSummary {
	t := TerminationSummary{PID: o.PID, Workspace: ws, ProcessEnd: evidence.ProcessEnd{
		ExitCode: o.ExitCode, Exited: o.Exited, StdioClosed: o.StdioClosed,
		TimedOut: o.TimedOut, OutputExceeded: o.OutputExceeded, Aborted: o.Aborted,
		SignalsSent: append([]string{}, o.SignalsSent...), DurationMs: o.Duration.Milliseconds(),
		OutputBytes: o.OutputBytes, CapturedBytes: o.CapturedBytes,
	}}
	if o.Signal != "" {
		s := o.Signal
		t.Signal = &s
	}
	return t
}

func observation(req Request, o Outcome, ws WorkspaceDisposition) evidence.ProcessObservation {
	t := summarize(o, ws)
	obs := evidence.ProcessObservation{
		Program: req.Fixture, ProcessEnd: t.ProcessEnd, MaxOutputBytes: req.MaxOutputBytes,
		Workspace: ws.State, WorkspaceReason: ws.Reason,
	}
	if o.CollectorError != "" {
		ce := o.CollectorError
		obs.CollectorError = &ce
	}
	return obs
}
