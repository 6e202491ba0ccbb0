package attempt

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/campaign/fixture"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/server"
	"github.com/agentproof/agentproof/verdict"
)

// directBoard is a SetupBoard straight over a board client; prefix, when set, replaces
// the company's issue prefix (to make the real server refuse the company), and badKey
// blanks every secret's key (to make it refuse the secrets).
type directBoard struct {
	c      *client.Client
	prefix string
	badKey bool
}

func (b directBoard) CreateCompany(ctx context.Context, name, prefix string) (CompanyBoard, error) {
	if b.prefix != "" {
		prefix = b.prefix
	}
	co, err := b.c.CreateCompany(ctx, name, prefix)
	if err != nil {
		return nil, err
	}
	return b.Company(co.ID()), nil
}

func (b directBoard) Company(id string) CompanyBoard {
	if b.badKey {
		return badKeys{b.c.Company(id)}
	}
	return b.c.Company(id)
}

type badKeys struct{ *client.Company }

func (c badKeys) CreateSecret(ctx context.Context, req api.CreateSecretRequest) (api.SecretRef, error) {
	req.Key = " "
	return c.Company.CreateSecret(ctx, req)
}

// fixtureWorld is the real control-plane server in process and the input of a
// reference cell's fixtures.
func fixtureWorld(t *testing.T) (*client.Client, fixtureInput) {
	t.Helper()
	s, err := server.Open(context.Background(), server.Options{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	cell := c.Cell("grader-calibration.reference.local.message-marker")
	rc, err := cell.Render("0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	secrets := redact.NewSet("apcanary-fixture-test")
	in := fixtureInput{plan: campaign.AttemptPlan{CampaignID: "c", Cell: cell, Attempt: 1, Nonce: rc.Nonce, Case: rc},
		stored: []storedSecret{{name: CanarySecretKey, value: "apcanary-fixture-test"}}, secrets: secrets, agent: agentInput{workspace: t.TempDir()}}
	return client.New(ts.URL, s.BoardToken(), nil), in
}

// TestFixtureSetupFailuresAreTheHarness: the fixture graph sets up against the real
// server; when the board refuses a fixture (the company, a secret) or a credential is
// missing, the attempt is inconclusive with an infrastructure class — never failed,
// never candidate_failure — and whatever was set up is torn down.
func TestFixtureSetupFailuresAreTheHarness(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		board   func(*client.Client) SetupBoard
		missing []string
		words   string // in the judgement's reason; "" for a complete setup
	}{
		{"complete", func(c *client.Client) SetupBoard { return directBoard{c: c} }, nil, ""},
		{"the board refuses the company", func(c *client.Client) SetupBoard { return directBoard{c: c, prefix: "not-upper"} }, nil, "creating the company"},
		{"the board refuses a secret", func(c *client.Client) SetupBoard { return directBoard{c: c, badKey: true} }, nil, "storing secret " + CanarySecretKey},
		{"a credential is missing", func(c *client.Client) SetupBoard { return directBoard{c: c} }, []string{"OPENAI_API_KEY"}, "missing credential OPENAI_API_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, in := fixtureWorld(t)
			in.missing = tt.missing
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			f := setup(ctx, tt.board(c), in)
			if tt.words == "" {
				if f.Fault != nil || f.TaskID == "" || f.CompanyID == "" || f.EnvironmentID == "" || f.Identifier == "" {
					t.Fatalf("setup = %+v, fault %v", f, f.Fault)
				}
				if err := f.Set.Teardown(ctx); err != nil {
					t.Fatal(err)
				}
				return
			}
			if f.Fault == nil || f.Fault.Origin != verdict.Harness {
				t.Fatalf("fault = %+v, want the harness's", f.Fault)
			}
			s := &Stages{Pace: PaceScripted, Fixtures: f, Teardown: Teardown{Confirmed: true}}
			j := Judge(s)
			if j.Verdict != verdict.Inconclusive || j.FailureClass != verdict.PermanentInfrastructure || !strings.Contains(j.Reason, tt.words) {
				t.Errorf("judgement = %+v, want inconclusive permanent_infrastructure naming %q", j, tt.words)
			}
			for _, st := range f.Set.States() {
				if st.Cleanup == fixture.CleanupPending {
					t.Errorf("fixture %s was not torn down after the failed setup", st.ID)
				}
			}
		})
	}
}

// TestManagerFixture: a blocker-guidance cell's fixtures create a manager agent beside
// the worker through the board API; the task is
// the worker's; other flows create no manager.
func TestManagerFixture(t *testing.T) {
	t.Parallel()
	c, in := fixtureWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	cell := cat.Cell("journey-calibration.reference.local.blocker-guidance")
	rc, err := cell.Render("0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	plain := setup(ctx, directBoard{c: c}, in)
	if plain.Fault != nil || plain.AgentID == "" || plain.ManagerID != "" {
		t.Fatalf("message-marker setup = %+v, want a worker and no manager", plain)
	}
	in.plan.Cell, in.plan.Case = cell, rc
	f := setup(ctx, directBoard{c: c}, in)
	if f.Fault != nil || f.AgentID == "" || f.ManagerID == "" || f.ManagerID == f.AgentID {
		t.Fatalf("blocker setup = %+v, fault %v", f, f.Fault)
	}
	st, err := c.Company(f.CompanyID).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]string{}
	for _, a := range st.Actors {
		roles[a.ID] = a.Role
	}
	if roles[f.ManagerID] != "manager" || len(st.Tasks) != 1 || st.Tasks[0].AssigneeActorID == nil || *st.Tasks[0].AssigneeActorID != f.AgentID {
		t.Errorf("actors %v, tasks %+v: want a manager and the task assigned to worker %s", roles, st.Tasks, f.AgentID)
	}
	if err := f.Set.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
}
