package campaign

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/redact"
)

// Record is what the registry keeps of one set-up fixture: the control-plane object ids
// it created or found and sanitized descriptive metadata — never a raw secret (seed 000
// "New Paperclip object fixtures": "Keep returned fixture state to IDs and sanitized
// metadata"). Keys are roles chosen by the fixture ("company", a credential name for a
// secret reference, …).
type Record struct {
	IDs      map[string]string `json:"ids"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// clone returns a deep copy of r (nil maps stay nil).
func (r Record) clone() Record {
	return Record{IDs: maps.Clone(r.IDs), Metadata: maps.Clone(r.Metadata)}
}

// Resolved maps a fixture id to its Record. A setup or teardown function receives its own
// copy holding every fixture completed so far (its dependencies among them).
type Resolved map[string]Record

func (r Resolved) clone() Resolved {
	out := make(Resolved, len(r))
	for id, rec := range r {
		out[id] = rec.clone()
	}
	return out
}

// Definition is one fixture (spec runner-e2e-harness §6). Setup creates or finds the
// object through the public API and returns its Record; Teardown (optional) removes it
// and receives the Record Setup returned, after sanitising. Both must act only through
// the public API (seed 000: no direct database writes, no private runner endpoints) and
// bound their own work: teardown runs even when the attempt's context was cancelled.
type Definition struct {
	// ID names the fixture; unique within a registry, non-empty.
	ID string
	// Dependencies are fixture ids that must be set up first (and are torn down after).
	Dependencies []string
	Setup        func(ctx context.Context, resolved Resolved) (Record, error)
	Teardown     func(ctx context.Context, rec Record, resolved Resolved) error
}

// Registry holds fixture definitions in registration order. It is not safe for
// concurrent Register calls; one registry serves one attempt.
type Registry struct {
	defs    []Definition
	index   map[string]int
	secrets *redact.Set
}

// NewRegistry returns an empty registry. secrets is the attempt's secret set (nil for
// none): every Record a setup returns is checked against it and against secret shapes
// (see SetupAll).
func NewRegistry(secrets *redact.Set) *Registry {
	return &Registry{index: make(map[string]int), secrets: secrets}
}

// Register adds d. It returns an error (and registers nothing) when the id is empty or
// already registered, or Setup is nil; dependencies are checked by SetupAll and Order,
// so definitions may be registered in any order.
func (r *Registry) Register(d Definition) error {
	var problems []string
	if d.ID == "" {
		problems = append(problems, "empty id")
	} else if _, dup := r.index[d.ID]; dup {
		problems = append(problems, "duplicate id")
	}
	if d.Setup == nil {
		problems = append(problems, "no setup function")
	}
	if len(problems) > 0 {
		return fmt.Errorf("campaign: registering fixture %q: %s", d.ID, strings.Join(problems, ", "))
	}
	d.Dependencies = slices.Clone(d.Dependencies)
	r.index[d.ID] = len(r.defs)
	r.defs = append(r.defs, d)
	return nil
}

// UnknownDependencyError is a dependency naming no registered fixture.
type UnknownDependencyError struct {
	Fixture, Dependency string
}

// Error names the fixture and the unknown dependency.
func (e *UnknownDependencyError) Error() string {
	return fmt.Sprintf("fixture %q: unknown fixture dependency %q", e.Fixture, e.Dependency)
}

// CycleError is a dependency cycle; Path starts and ends with the same fixture id.
type CycleError struct {
	Path []string
}

// Error shows the cycle as "a → b → a".
func (e *CycleError) Error() string {
	return "fixture dependency cycle: " + strings.Join(e.Path, " → ")
}

// Order returns the setup order: definitions in registration order, each preceded
// depth-first by its not-yet-ordered dependencies (in the order it lists them). It
// checks the whole graph first and returns every problem together (errors.Join of
// *UnknownDependencyError and *CycleError values, one per unknown dependency and one per
// cycle), so that nothing is set up for a broken graph.
func (r *Registry) Order() ([]string, error) {
	const (
		unvisited = iota
		onStack
		done
	)
	state := make([]int, len(r.defs))
	var order []string
	var stack []string
	var errs []error
	var visit func(i int)
	visit = func(i int) {
		d := r.defs[i]
		state[i] = onStack
		stack = append(stack, d.ID)
		for _, dep := range d.Dependencies {
			j, ok := r.index[dep]
			switch {
			case !ok:
				errs = append(errs, &UnknownDependencyError{Fixture: d.ID, Dependency: dep})
			case state[j] == onStack:
				start := slices.Index(stack, dep)
				path := append(slices.Clone(stack[start:]), dep)
				errs = append(errs, &CycleError{Path: path})
			case state[j] == unvisited:
				visit(j)
			}
		}
		stack = stack[:len(stack)-1]
		state[i] = done
		order = append(order, d.ID)
	}
	for i := range r.defs {
		if state[i] == unvisited {
			visit(i)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("campaign: fixture graph: %w", errors.Join(errs...))
	}
	return order, nil
}

// FixtureError is the failure of one fixture's setup or teardown.
type FixtureError struct {
	Fixture string
	Op      string // "setup" or "teardown"
	Err     error
}

// Error is `fixture "<id>" <op>: <cause>`.
func (e *FixtureError) Error() string {
	return fmt.Sprintf("fixture %q %s: %v", e.Fixture, e.Op, e.Err)
}

// Unwrap returns the cause.
func (e *FixtureError) Unwrap() error { return e.Err }

// SetupError is a failed SetupAll: the setup error and, when tearing down the fixtures
// that had completed also failed, the teardown error. Unwrap returns both, so errors.Is
// and errors.As see through to either.
type SetupError struct {
	Setup    error // a *FixtureError, or the graph error of Order
	Teardown error // nil when the partial teardown succeeded
}

// Error is "fixture setup failed: <setup error>", or "fixture setup failed and cleanup
// failed: <setup error>; <teardown error>" (spec §6).
func (e *SetupError) Error() string {
	if e.Teardown == nil {
		return "fixture setup failed: " + e.Setup.Error()
	}
	return "fixture setup failed and cleanup failed: " + e.Setup.Error() + "; " + e.Teardown.Error()
}

// Unwrap returns the setup error and, if any, the teardown error.
func (e *SetupError) Unwrap() []error {
	if e.Teardown == nil {
		return []error{e.Setup}
	}
	return []error{e.Setup, e.Teardown}
}

// ErrSecretInRecord marks a setup whose Record carried a secret value or a secret-shaped
// value in an id; metadata is redacted instead (see SetupAll). Its text contains
// "secret … leak", which ClassifyError maps to secret_leak.
var ErrSecretInRecord = errors.New("secret value leaked into a fixture record id")

// CleanupStatus says what happened to one fixture at teardown (for result.json's
// cleanup section).
type CleanupStatus string

// Cleanup statuses of a fixture.
const (
	// CleanupRemoved: its teardown ran and returned nil.
	CleanupRemoved CleanupStatus = "removed"
	// CleanupFailedStatus: its teardown returned an error.
	CleanupFailedStatus CleanupStatus = "failed"
	// CleanupNotNeeded: it has no teardown (the instance's removal cleans it up).
	CleanupNotNeeded CleanupStatus = "not_needed"
	// CleanupPending: it is set up and not yet torn down.
	CleanupPending CleanupStatus = "pending"
)

// FixtureState is one completed fixture as a report shows it.
type FixtureState struct {
	ID      string        `json:"id"`
	Record  Record        `json:"record"`
	Cleanup CleanupStatus `json:"cleanup"`
	// Error is the teardown error's text when Cleanup is failed.
	Error string `json:"error,omitempty"`
}

// Fixtures is the result of SetupAll: the completed fixtures in completion order.
// Teardown must be called exactly once when the attempt ends (SetupAll calls it itself
// after a failed setup). It is not safe for concurrent use.
type Fixtures struct {
	reg       *Registry
	completed []FixtureState
	byID      map[string]int
	tornDown  bool
}

// Record returns the Record of fixture id and whether it completed setup.
func (f *Fixtures) Record(id string) (Record, bool) {
	i, ok := f.byID[id]
	if !ok {
		return Record{}, false
	}
	return f.completed[i].Record.clone(), true
}

// States returns the completed fixtures in completion order with their cleanup status.
func (f *Fixtures) States() []FixtureState {
	out := make([]FixtureState, len(f.completed))
	for i, s := range f.completed {
		out[i] = s
		out[i].Record = s.Record.clone()
	}
	return out
}

func (f *Fixtures) resolved() Resolved {
	out := make(Resolved, len(f.completed))
	for _, s := range f.completed {
		out[s.ID] = s.Record
	}
	return out.clone()
}

// SetupAll checks the graph (Order) and then sets fixtures up one at a time in that
// order (spec §6; seed 000 "New Paperclip object fixtures"). Each setup receives every
// Record completed so far. A Record is sanitised before it is kept or passed on:
// metadata values are redacted (exact secrets of the registry's set and secret shapes),
// and an id containing either makes the setup fail with ErrSecretInRecord (the fixture
// still counts as completed, with the id redacted, so that its teardown is attempted).
//
// On the first failure SetupAll stops, tears down what completed (reverse completion
// order, continuing through errors, with context.WithoutCancel(ctx) so that an
// interrupted attempt still cleans up) and returns a *SetupError carrying the setup
// error (a *FixtureError) and the teardown error, if any. A broken graph returns a
// *SetupError wrapping Order's error before anything is set up. The returned *Fixtures
// is never nil: after a failure it reports what was set up and torn down.
func (r *Registry) SetupAll(ctx context.Context) (*Fixtures, error) {
	f := &Fixtures{reg: r, byID: make(map[string]int)}
	order, err := r.Order()
	if err != nil {
		f.tornDown = true
		return f, &SetupError{Setup: err}
	}
	for _, id := range order {
		d := r.defs[r.index[id]]
		rec, err := d.Setup(ctx, f.resolved())
		if err != nil {
			return f, f.abort(ctx, &FixtureError{Fixture: id, Op: "setup", Err: err})
		}
		rec, leak := r.sanitize(rec)
		status := CleanupNotNeeded
		if d.Teardown != nil {
			status = CleanupPending
		}
		f.byID[id] = len(f.completed)
		f.completed = append(f.completed, FixtureState{ID: id, Record: rec, Cleanup: status})
		if leak != "" {
			return f, f.abort(ctx, &FixtureError{Fixture: id, Op: "setup", Err: fmt.Errorf("%w (%s)", ErrSecretInRecord, leak)})
		}
	}
	return f, nil
}

// abort tears down after a failed setup and builds the *SetupError.
func (f *Fixtures) abort(ctx context.Context, setupErr error) error {
	return &SetupError{Setup: setupErr, Teardown: f.Teardown(context.WithoutCancel(ctx))}
}

// sanitize returns a sanitised copy of rec and, when an id held a secret, where.
func (r *Registry) sanitize(rec Record) (Record, string) {
	out := rec.clone()
	var leak string
	for _, k := range slices.Sorted(maps.Keys(out.IDs)) {
		v := out.IDs[k]
		if l, found := r.secrets.FindLeak([]byte(v), true); found {
			if leak == "" {
				leak = fmt.Sprintf("id %q: %s", k, l.Reason)
			}
			out.IDs[k] = r.secrets.RedactText(v)
		}
	}
	for k, v := range out.Metadata {
		out.Metadata[k] = r.secrets.RedactText(v)
	}
	return out, leak
}

// Teardown tears the completed fixtures down in reverse completion order, skipping
// those without a Teardown, continuing after errors, and returns nil or
// "fixture teardown failed: " wrapping errors.Join of one *FixtureError per failure (in
// teardown order). Each teardown receives its Record and every Record still set up. A
// second call does nothing and returns nil.
func (f *Fixtures) Teardown(ctx context.Context) error {
	if f.tornDown {
		return nil
	}
	f.tornDown = true
	var errs []error
	for i := len(f.completed) - 1; i >= 0; i-- {
		s := &f.completed[i]
		d := f.reg.defs[f.reg.index[s.ID]]
		if d.Teardown == nil {
			continue
		}
		resolved := make(Resolved, i+1)
		for _, c := range f.completed[:i+1] {
			resolved[c.ID] = c.Record.clone()
		}
		if err := d.Teardown(ctx, s.Record.clone(), resolved); err != nil {
			s.Cleanup = CleanupFailedStatus
			s.Error = f.reg.secrets.RedactText(err.Error())
			errs = append(errs, &FixtureError{Fixture: s.ID, Op: "teardown", Err: err})
			continue
		}
		s.Cleanup = CleanupRemoved
	}
	if len(errs) > 0 {
		return fmt.Errorf("fixture teardown failed: %w", errors.Join(errs...))
	}
	return nil
}
