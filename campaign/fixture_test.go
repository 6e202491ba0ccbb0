package campaign

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentproof/agentproof/redact"

	"github.com/agentproof/agentproof/verdict"
)

// fixtureLog records the order of setup and teardown calls.
type fixtureLog struct{ calls []string }

// spec describes one test fixture: its dependencies and whether setup or teardown fail.
type spec struct {
	id           string
	deps         []string
	failSetup    bool
	failTeardown bool
	noTeardown   bool
}

// define builds a Definition that logs its calls and records the ids it saw resolved.
func (l *fixtureLog) define(s spec) Definition {
	d := Definition{
		ID:           s.id,
		Dependencies: s.deps,
		Setup: func(_ context.Context, resolved Resolved) (Record, error) {
			for _, dep := range s.deps {
				if _, ok := resolved[dep]; !ok {
					return Record{}, fmt.Errorf("dependency %s not resolved", dep)
				}
			}
			l.calls = append(l.calls, "setup "+s.id)
			if s.failSetup {
				return Record{}, errors.New("boom in " + s.id)
			}
			return Record{IDs: map[string]string{s.id: "id-" + s.id}}, nil
		},
	}
	if !s.noTeardown {
		d.Teardown = func(_ context.Context, rec Record, _ Resolved) error {
			if rec.IDs[s.id] != "id-"+s.id {
				return fmt.Errorf("teardown of %s got record %v", s.id, rec)
			}
			l.calls = append(l.calls, "teardown "+s.id)
			if s.failTeardown {
				return errors.New("teardown boom in " + s.id)
			}
			return nil
		}
	}
	return d
}

func TestRegistrySetupAndTeardown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		specs []spec
		// wantSetupErr are substrings of SetupAll's error ("" entries none: no error).
		wantSetupErr []string
		// wantCalls is the call log after SetupAll and (when setup succeeded) Teardown.
		wantCalls       []string
		wantTeardownErr []string
		wantCleanup     map[string]CleanupStatus
	}{
		{
			name: "paperclip graph registered out of order",
			specs: []spec{
				{id: "agent", deps: []string{"environment", "secrets"}},
				{id: "task", deps: []string{"agent"}, noTeardown: true},
				{id: "company"},
				{id: "environment", deps: []string{"company", "secrets"}},
				{id: "secrets", deps: []string{"company"}},
			},
			wantCalls: []string{
				"setup company", "setup secrets", "setup environment", "setup agent", "setup task",
				"teardown agent", "teardown environment", "teardown secrets", "teardown company",
			},
			wantCleanup: map[string]CleanupStatus{"company": CleanupRemoved, "secrets": CleanupRemoved,
				"environment": CleanupRemoved, "agent": CleanupRemoved, "task": CleanupNotNeeded},
		},
		{
			name: "failing middle setup tears down what completed, in reverse",
			specs: []spec{
				{id: "company"},
				{id: "secrets", deps: []string{"company"}},
				{id: "environment", deps: []string{"secrets"}, failSetup: true},
				{id: "agent", deps: []string{"environment"}},
			},
			wantSetupErr: []string{"fixture setup failed: ", `fixture "environment" setup: boom in environment`},
			wantCalls:    []string{"setup company", "setup secrets", "setup environment", "teardown secrets", "teardown company"},
			wantCleanup:  map[string]CleanupStatus{"company": CleanupRemoved, "secrets": CleanupRemoved},
		},
		{
			name: "failing middle setup and failing teardown report both",
			specs: []spec{
				{id: "company", failTeardown: true},
				{id: "secrets", deps: []string{"company"}},
				{id: "environment", deps: []string{"secrets"}, failSetup: true},
			},
			wantSetupErr: []string{
				"fixture setup failed and cleanup failed: ",
				`fixture "environment" setup: boom in environment`,
				`fixture teardown failed: fixture "company" teardown: teardown boom in company`,
			},
			wantCalls:   []string{"setup company", "setup secrets", "setup environment", "teardown secrets", "teardown company"},
			wantCleanup: map[string]CleanupStatus{"company": CleanupFailedStatus, "secrets": CleanupRemoved},
		},
		{
			name:         "first setup fails: nothing to tear down",
			specs:        []spec{{id: "company", failSetup: true}, {id: "secrets", deps: []string{"company"}}},
			wantSetupErr: []string{`fixture "company" setup: boom in company`},
			wantCalls:    []string{"setup company"},
			wantCleanup:  map[string]CleanupStatus{},
		},
		{
			name: "teardown continues through errors and reports them all",
			specs: []spec{
				{id: "a", failTeardown: true},
				{id: "b", deps: []string{"a"}},
				{id: "c", deps: []string{"b"}, failTeardown: true},
			},
			wantCalls: []string{"setup a", "setup b", "setup c", "teardown c", "teardown b", "teardown a"},
			wantTeardownErr: []string{
				"fixture teardown failed: ",
				`fixture "c" teardown: teardown boom in c`,
				`fixture "a" teardown: teardown boom in a`,
			},
			wantCleanup: map[string]CleanupStatus{"a": CleanupFailedStatus, "b": CleanupRemoved, "c": CleanupFailedStatus},
		},
		{
			name: "unknown dependencies and cycles are all reported before any setup",
			specs: []spec{
				{id: "company"},
				{id: "a", deps: []string{"b", "ghost"}},
				{id: "b", deps: []string{"a"}},
				{id: "self", deps: []string{"self", "phantom"}},
			},
			wantSetupErr: []string{
				`fixture "a": unknown fixture dependency "ghost"`,
				"fixture dependency cycle: a → b → a",
				"fixture dependency cycle: self → self",
				`fixture "self": unknown fixture dependency "phantom"`,
			},
			wantCalls:   nil,
			wantCleanup: map[string]CleanupStatus{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			log := &fixtureLog{}
			reg := NewRegistry(nil)
			for _, s := range tt.specs {
				if err := reg.Register(log.define(s)); err != nil {
					t.Fatal(err)
				}
			}
			fx, err := reg.SetupAll(context.Background())
			if fx == nil {
				t.Fatal("SetupAll returned nil fixtures")
			}
			checkErr(t, "SetupAll", err, tt.wantSetupErr)
			if err == nil {
				checkErr(t, "Teardown", fx.Teardown(context.Background()), tt.wantTeardownErr)
				if err := fx.Teardown(context.Background()); err != nil {
					t.Errorf("second Teardown = %v, want nil", err)
				}
			} else if err := fx.Teardown(context.Background()); err != nil {
				t.Errorf("Teardown after a failed setup = %v, want nil (already torn down)", err)
			}
			if diff := cmp.Diff(tt.wantCalls, log.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			gotCleanup := map[string]CleanupStatus{}
			for _, s := range fx.States() {
				gotCleanup[s.ID] = s.Cleanup
			}
			if diff := cmp.Diff(tt.wantCleanup, gotCleanup); diff != "" {
				t.Errorf("cleanup statuses (-want +got):\n%s", diff)
			}
		})
	}
}

// checkErr checks that err is nil when want is empty, else contains every want string.
func checkErr(t *testing.T, what string, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Errorf("%s: unexpected error %v", what, err)
		}
		return
	}
	if err == nil {
		t.Errorf("%s: no error, want one containing %q", what, want)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not contain %q", what, err, w)
		}
	}
}

func TestSetupErrorUnwrapsBoth(t *testing.T) {
	t.Parallel()
	setupBoom := errors.New("setup boom")
	teardownBoom := errors.New("teardown boom")
	reg := NewRegistry(nil)
	must(t, reg.Register(Definition{ID: "company",
		Setup: func(context.Context, Resolved) (Record, error) {
			return Record{IDs: map[string]string{"company": "c1"}}, nil
		},
		Teardown: func(context.Context, Record, Resolved) error { return teardownBoom }}))
	must(t, reg.Register(Definition{ID: "agent", Dependencies: []string{"company"},
		Setup: func(context.Context, Resolved) (Record, error) { return Record{}, setupBoom }}))
	_, err := reg.SetupAll(context.Background())
	var se *SetupError
	if !errors.As(err, &se) {
		t.Fatalf("err = %T %v, want *SetupError", err, err)
	}
	if !errors.Is(err, setupBoom) || !errors.Is(err, teardownBoom) {
		t.Errorf("errors.Is does not see both causes in %v", err)
	}
	var fe *FixtureError
	if !errors.As(se.Setup, &fe) || fe.Fixture != "agent" || fe.Op != "setup" {
		t.Errorf("setup error = %#v, want agent setup", se.Setup)
	}
	if !errors.As(se.Teardown, &fe) || fe.Fixture != "company" || fe.Op != "teardown" {
		t.Errorf("teardown error = %#v, want company teardown", se.Teardown)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRegisterRejects(t *testing.T) {
	t.Parallel()
	setup := func(context.Context, Resolved) (Record, error) { return Record{}, nil }
	tests := []struct {
		name string
		def  Definition
		want string
	}{
		{"empty id", Definition{Setup: setup}, "empty id"},
		{"duplicate", Definition{ID: "company", Setup: setup}, "duplicate id"},
		{"no setup", Definition{ID: "agent"}, "no setup function"},
		{"empty id and no setup", Definition{}, "empty id, no setup function"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg := NewRegistry(nil)
			must(t, reg.Register(Definition{ID: "company", Setup: setup}))
			err := reg.Register(tt.def)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			order, err := reg.Order()
			if err != nil || !cmp.Equal(order, []string{"company"}) {
				t.Errorf("a rejected definition changed the registry: %v %v", order, err)
			}
		})
	}
}

// TestRecordsKeepOnlySanitizedState checks that secret values never stay in a Record:
// metadata is redacted, a secret in an id fails the setup (classified secret_leak) and
// the fixture is still torn down, and callers cannot alter the registry's copies.
func TestRecordsKeepOnlySanitizedState(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-credential-value-0123456789"
	var tornDown []string
	var sawInTeardown Record
	reg := NewRegistry(redact.NewSet(secret))
	must(t, reg.Register(Definition{ID: "company",
		Setup: func(context.Context, Resolved) (Record, error) {
			return Record{IDs: map[string]string{"company": "0b6f4c9e-2f0e-4d55-9a53-7a1c3f2f9d10"},
				Metadata: map[string]string{"name": "Runner E2E " + secret, "key": "sk-" + strings.Repeat("A", 40)}}, nil
		},
		Teardown: func(_ context.Context, rec Record, _ Resolved) error {
			tornDown = append(tornDown, "company")
			return nil
		}}))
	must(t, reg.Register(Definition{ID: "secrets", Dependencies: []string{"company"},
		Setup: func(_ context.Context, resolved Resolved) (Record, error) {
			resolved["company"].IDs["company"] = "tampered" // must not reach the registry
			return Record{IDs: map[string]string{"OPENAI_API_KEY": secret}}, nil
		},
		Teardown: func(_ context.Context, rec Record, _ Resolved) error {
			tornDown = append(tornDown, "secrets")
			sawInTeardown = rec
			return nil
		}}))
	fx, err := reg.SetupAll(context.Background())
	if !errors.Is(err, ErrSecretInRecord) {
		t.Fatalf("err = %v, want ErrSecretInRecord", err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error text carries the secret: %v", err)
	}
	if got := ClassifyError(err); got != verdict.SecretLeak {
		t.Errorf("ClassifyError = %s, want %s", got, verdict.SecretLeak)
	}
	if diff := cmp.Diff([]string{"secrets", "company"}, tornDown); diff != "" {
		t.Errorf("teardown order (-want +got):\n%s", diff)
	}
	if sawInTeardown.IDs["OPENAI_API_KEY"] != redact.Redacted {
		t.Errorf("teardown received %v, want the redacted id", sawInTeardown.IDs)
	}
	company, ok := fx.Record("company")
	if !ok {
		t.Fatal("company not recorded")
	}
	want := Record{IDs: map[string]string{"company": "0b6f4c9e-2f0e-4d55-9a53-7a1c3f2f9d10"},
		Metadata: map[string]string{"name": "Runner E2E " + redact.Redacted, "key": redact.RedactedShape}}
	if diff := cmp.Diff(want, company); diff != "" {
		t.Errorf("company record (-want +got):\n%s", diff)
	}
	company.IDs["company"] = "changed by caller"
	if again, _ := fx.Record("company"); again.IDs["company"] != want.IDs["company"] {
		t.Errorf("Record returned an alias: %v", again)
	}
	for _, s := range fx.States() {
		for _, m := range []map[string]string{s.Record.IDs, s.Record.Metadata} {
			for k, v := range m {
				if strings.Contains(v, secret) {
					t.Errorf("%s: %s keeps the secret", s.ID, k)
				}
			}
		}
	}
}

// TestTeardownAfterCancelledSetup checks that an interrupted attempt still tears down:
// the setup fails because its context was cancelled, and the teardown gets a live one.
func TestTeardownAfterCancelledSetup(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var teardownCtxErr error = errors.New("teardown not called")
	reg := NewRegistry(nil)
	must(t, reg.Register(Definition{ID: "company",
		Setup: func(context.Context, Resolved) (Record, error) {
			return Record{IDs: map[string]string{"company": "c"}}, nil
		},
		Teardown: func(ctx context.Context, _ Record, _ Resolved) error {
			teardownCtxErr = ctx.Err()
			return nil
		}}))
	must(t, reg.Register(Definition{ID: "agent", Dependencies: []string{"company"},
		Setup: func(ctx context.Context, _ Resolved) (Record, error) {
			cancel()
			return Record{}, ctx.Err()
		}}))
	_, err := reg.SetupAll(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if teardownCtxErr != nil {
		t.Errorf("teardown context: %v, want a live context", teardownCtxErr)
	}
}
