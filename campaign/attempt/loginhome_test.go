package attempt

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/loginfile"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/verdict"
)

// loginValue is a login file whose token alone is a secret too (loginfile.SecretValues).
const (
	loginValue = `{"token":"grok-login-token-9d2e4b7a1c6f3e80","user":"agentproof"}`
	loginToken = "grok-login-token-9d2e4b7a1c6f3e80"
)

// loginWorld is fixtureWorld with a login_file credential on the cell: the attempt's
// tree (root, instance home root/home) and the value stored as a login_file secret.
func loginWorld(t *testing.T) (directBoard, fixtureInput, string) {
	t.Helper()
	c, in := fixtureWorld(t)
	cell := *in.plan.Cell
	cell.LoginFile = &catalog.Credential{ID: "GROK_AUTH_JSON", Scope: "profile", Kind: catalog.CredentialKindLoginFile, LoginFile: ".grok/auth.json"}
	in.plan.Cell = &cell
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "home"), 0o700); err != nil {
		t.Fatal(err)
	}
	in.stored = append(in.stored, storedSecret{name: "GROK_AUTH_JSON", value: loginValue, kind: api.SecretKindLoginFile})
	in.secrets = LoginSecrets(in.secrets, loginValue)
	in.login = &loginInput{credential: cell.LoginFile, value: loginValue, root: root, home: filepath.Join(root, "home")}
	return directBoard{c: c}, in, root
}

// TestLoginFileFixture: the fixtures stage stores the login file as a login_file
// secret, seeds it into INSTANCE/login-homes/<company> (HOME and its directory 0700,
// the file 0600, the exact value) before the agent exists, gives the agent loginHome
// and no reference to the secret, and keeps the value out of every record; teardown's
// destroy removes the HOME, confirms it and writes login-file.json without the value.
func TestLoginFileFixture(t *testing.T) {
	t.Parallel()
	b, in, root := loginWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := setup(ctx, b, in)
	if f.Fault != nil || f.LoginFile == nil || f.AgentID == "" {
		t.Fatalf("setup = %+v, fault %v", f, f.Fault)
	}
	home := filepath.Join(root, "home", "login-homes", f.CompanyID)
	if f.LoginFile.Seeded.Home != home || f.LoginFile.Seeded.File != filepath.Join(home, ".grok", "auth.json") || f.LoginFile.Seeded.Bytes != len(loginValue) {
		t.Errorf("seeded %+v, want %s/.grok/auth.json of %d bytes", f.LoginFile.Seeded, home, len(loginValue))
	}
	for path, want := range map[string]os.FileMode{home: 0o700 | os.ModeDir, filepath.Join(home, ".grok"): 0o700 | os.ModeDir, f.LoginFile.Seeded.File: 0o600} {
		if fi, err := os.Lstat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode(), err, want)
		}
	}
	if got, err := os.ReadFile(f.LoginFile.Seeded.File); err != nil || string(got) != loginValue {
		t.Errorf("the seeded file holds %q (%v)", got, err)
	}
	states, _ := json.Marshal(f.Set.States())
	if strings.Contains(string(states), loginToken) || !strings.Contains(string(states), `"GROK_AUTH_JSON":"login_file"`) {
		t.Errorf("fixture records hold the token or do not mark the login_file secret: %s", states)
	}
	st, err := b.c.Company(f.CompanyID).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range st.Actors {
		if a.ID != f.AgentID {
			continue
		}
		var cfg api.AdapterConfig
		if err := json.Unmarshal(a.AdapterConfig, &cfg); err != nil {
			t.Fatal(err)
		}
		if _, bound := cfg.Env["GROK_AUTH_JSON"]; !cfg.LoginHome || bound || strings.Contains(string(a.AdapterConfig), home) {
			t.Errorf("agent adapterConfig %s: want loginHome, no GROK_AUTH_JSON env and no path", a.AdapterConfig)
		}
	}
	if err := f.Set.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	ev := campaign.NewEvidence(t.TempDir())
	if problem := destroyLoginHome(ev, f.Secrets, f.LoginFile); problem != "" {
		t.Fatalf("destroy: %s", problem)
	}
	if _, err := os.Lstat(home); !os.IsNotExist(err) {
		t.Errorf("the HOME is still there after the destroy: %v", err)
	}
	b2, err := os.ReadFile(filepath.Join(ev.Dir(), "login-file.json"))
	if err != nil || strings.Contains(string(b2), loginToken) || !strings.Contains(string(b2), `"confirmed": true`) {
		t.Errorf("login-file.json = %s (%v), want a confirmed destroy without the value", b2, err)
	}
}

// TestLoginFileRefusals: a company HOME that is a symbolic link, already occupied, or
// outside the attempt's tree, and a value the secret set does not hold, stop setup
// before the agent exists with a permanent harness fault naming the refusal: the
// attempt is inconclusive (permanent_infrastructure), never the candidate's; nothing is
// written through the link, and nothing is left to destroy.
func TestLoginFileRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		prep  func(t *testing.T, in *fixtureInput, homes string)
		words string
	}{
		{"the HOME is a symbolic link", func(t *testing.T, in *fixtureInput, homes string) {
			victim := t.TempDir()
			if err := os.MkdirAll(homes, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, filepath.Join(homes, "company-0001")); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if es, _ := os.ReadDir(victim); len(es) > 0 {
					t.Errorf("something was written through the link: %v", es)
				}
			})
		}, "is a symbolic link"},
		{"the HOME is occupied", func(t *testing.T, in *fixtureInput, homes string) {
			if err := os.MkdirAll(filepath.Join(homes, "company-0001"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, "is already occupied"},
		{"the HOME is outside the attempt's tree", func(t *testing.T, in *fixtureInput, _ string) {
			in.login.root = t.TempDir()
		}, "the HOME is outside the attempt's tree"},
		{"the value is not in the secret set", func(t *testing.T, in *fixtureInput, _ string) {
			in.secrets = redact.NewSet(in.stored[0].value) // the canary only
		}, "not in the attempt's secret set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, in, root := loginWorld(t)
			tt.prep(t, &in, filepath.Join(root, "home", loginfile.HomesDir))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			f := setup(ctx, b, in)
			if f.Fault == nil || f.Fault.Origin != verdict.Harness || f.AgentID != "" || f.LoginFile != nil {
				t.Fatalf("setup = %+v, fault %+v: want a harness fault before the agent, nothing seeded", f, f.Fault)
			}
			j := Judge(&Stages{Pace: PaceScripted, Fixtures: f, Teardown: Teardown{Confirmed: true}})
			if j.Verdict != verdict.Inconclusive || j.FailureClass != verdict.PermanentInfrastructure ||
				!strings.Contains(j.Reason, "seeding login file GROK_AUTH_JSON") || !strings.Contains(j.Reason, tt.words) {
				t.Errorf("judgement = %+v, want inconclusive permanent_infrastructure naming %q", j, tt.words)
			}
			if strings.Contains(j.Reason, loginToken) {
				t.Error("the reason holds the token")
			}
		})
	}
}

// TestLoginFileDestroyUnconfirmed: a HOME that cannot be removed (here /proc/self/task,
// which no one can remove, as the seeded HOME's stand-in) is a cleanup problem naming
// the credential: the attempt fails with cleanup_failure, never candidate_failure.
func TestLoginFileDestroyUnconfirmed(t *testing.T) {
	t.Parallel()
	ev := campaign.NewEvidence(t.TempDir())
	seeded := &LoginFileEvidence{Credential: "GROK_AUTH_JSON", Seeded: loginfile.Seeded{Home: "/proc/self/task", File: filepath.Join(t.TempDir(), "absent"), Bytes: 3}}
	problem := destroyLoginHome(ev, redact.NewSet(), seeded)
	if !strings.Contains(problem, "the login file GROK_AUTH_JSON's HOME was not confirmed destroyed") {
		t.Fatalf("problem = %q", problem)
	}
	b, err := os.ReadFile(filepath.Join(ev.Dir(), "login-file.json"))
	if err != nil || !strings.Contains(string(b), `"confirmed": false`) {
		t.Errorf("login-file.json = %s (%v), want the unconfirmed destroy", b, err)
	}
	j := Judge(&Stages{Pace: PaceScripted, Teardown: Teardown{Problems: []string{problem}}})
	if j.Verdict != verdict.Failed || j.FailureClass != verdict.CleanupFailure {
		t.Errorf("judgement = %+v, want failed cleanup_failure", j)
	}
}
