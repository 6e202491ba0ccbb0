package attempt

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/campaign/fixture"
	"github.com/agentproof/agentproof/campaign/flows"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/verdict"
	"github.com/agentproof/agentproof/workspace"
)

// SetupBoard is the part of the board API the fixtures stage uses: creating a company
// and addressing one. clientBoard adapts *client.Client.
type SetupBoard interface {
	CreateCompany(ctx context.Context, name, issuePrefix string) (CompanyBoard, error)
	Company(id string) CompanyBoard
}

// CompanyBoard is one company's board operations the fixtures use; *client.Company
// implements it.
type CompanyBoard interface {
	ID() string
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	CreateSecret(ctx context.Context, req api.CreateSecretRequest) (api.SecretRef, error)
	Snapshot(ctx context.Context) (controlplane.State, error)
	CreateEnvironment(ctx context.Context, req api.CreateEnvironmentRequest) (controlplane.BoardResult, error)
	CreateAgent(ctx context.Context, req api.CreateAgentRequest) (controlplane.BoardResult, error)
	CreateIssue(ctx context.Context, req api.CreateIssueRequest) (controlplane.BoardResult, error)
	CreateConversation(ctx context.Context, req api.CreateConversationRequest) (controlplane.BoardResult, error)
}

// clientBoard is a SetupBoard over the board client of the attempt's server: the
// server running now (a restart during the flow replaces it; teardown talks to the
// new one).
type clientBoard struct{ in *instance }

func (b clientBoard) CreateCompany(ctx context.Context, name, prefix string) (CompanyBoard, error) {
	co, err := b.in.board().CreateCompany(ctx, name, prefix)
	if err != nil {
		return nil, err
	}
	return co, nil
}

func (b clientBoard) Company(id string) CompanyBoard { return lazyCompany{b.in, id} }

// lazyCompany addresses company id on the instance's current server at every call.
type lazyCompany struct {
	in *instance
	id string
}

func (c lazyCompany) co() *client.Company { return c.in.board().Company(c.id) }

func (c lazyCompany) ID() string                      { return c.id }
func (c lazyCompany) Start(ctx context.Context) error { return c.co().Start(ctx) }
func (c lazyCompany) Stop(ctx context.Context) error  { return c.co().Stop(ctx) }
func (c lazyCompany) CreateSecret(ctx context.Context, req api.CreateSecretRequest) (api.SecretRef, error) {
	return c.co().CreateSecret(ctx, req)
}
func (c lazyCompany) Snapshot(ctx context.Context) (controlplane.State, error) {
	return c.co().Snapshot(ctx)
}
func (c lazyCompany) CreateEnvironment(ctx context.Context, req api.CreateEnvironmentRequest) (controlplane.BoardResult, error) {
	return c.co().CreateEnvironment(ctx, req)
}
func (c lazyCompany) CreateAgent(ctx context.Context, req api.CreateAgentRequest) (controlplane.BoardResult, error) {
	return c.co().CreateAgent(ctx, req)
}
func (c lazyCompany) CreateIssue(ctx context.Context, req api.CreateIssueRequest) (controlplane.BoardResult, error) {
	return c.co().CreateIssue(ctx, req)
}

func (c lazyCompany) CreateConversation(ctx context.Context, req api.CreateConversationRequest) (controlplane.BoardResult, error) {
	return c.co().CreateConversation(ctx, req)
}

// Fixtures is what the fixtures stage returns: the set-up fixtures (for teardown and
// fixtures.json), the ids the flow and the observation need (company, control-plane
// environment, task and its identifier), when the task was created (turn 1's
// submission), the secret set with the credentials loaded, and the fault that stopped
// setup (nil when every fixture was set up). CleanupErr is the redacted error of the
// partial teardown SetupAll ran after a failed setup, or "".
type Fixtures struct {
	Set                      *fixture.Fixtures
	CompanyID, EnvironmentID string
	TaskID, Identifier       string
	// CreatedTitle is the task's title as the control plane saved it at creation (read
	// by the creation response's id, never by searching a title): "" for an untitled
	// case.
	CreatedTitle string
	// AgentID is the worker agent the task is assigned to; ManagerID the manager agent
	// of a case whose flow has one (flows.Flow.Manager), else "".
	AgentID, ManagerID string
	// ConversationID is the conversation of a chat case (flows.Flow.Chat; TaskID is
	// then its backing task) and WorkerID the handoff worker, else "".
	ConversationID, WorkerID string
	Submitted                time.Time
	Secrets                  *redact.Set
	Fault                    *verdict.Fault
	CleanupErr               string
	// Workspace is the workspace as it was before the task existed (before turn 1),
	// the first side of the per-turn workspace diff; nil when it could not be read
	// (WorkspaceErr says why).
	Workspace    *workspace.Snapshot
	WorkspaceErr string
	// LoginFile is the login file the login fixture seeded (its HOME, path and size;
	// catalog.Cell.LoginFile), nil when the cell has none or it was not seeded; the
	// teardown stage destroys it.
	LoginFile *LoginFileEvidence
}

// fixtureInput is everything the fixture definitions need: the plan, the secrets to
// store (in order, the canary first), the credentials without a value, the secret set,
// and what the agent's adapter configuration needs.
type fixtureInput struct {
	plan    campaign.AttemptPlan
	stored  []storedSecret
	missing []string
	secrets *redact.Set
	agent   agentInput
	// lease is the control-plane environment config of a sandbox cell's lease
	// ({"lease": <lease.json>}), nil for a local cell.
	lease json.RawMessage
	// login is the cell's login file to seed, nil for none.
	login *loginInput
}

// storedSecret is a secret the secrets fixture stores: its credential name, value and
// kind ("" is env).
type storedSecret struct {
	name, value string
	kind        api.SecretKind
}

// setupFixtures loads the cell's credentials (and the live provider's), adds them to
// the secret set and sets the fixture graph up through the attempt's server.
func (x *LocalExecutor) setupFixtures(ctx context.Context, a *attempt, p *Provisioned) Fixtures {
	// Before the task exists no agent has run: this is the workspace before turn 1.
	before, werr := workspace.Take(ctx, p.Workspace, workspace.DiffLimits)
	f := x.setupFixtureSet(ctx, a, p)
	f.Workspace = before
	if werr != nil {
		f.WorkspaceErr = werr.Error()
		if p.Secrets != nil {
			f.WorkspaceErr = p.Secrets.RedactText(f.WorkspaceErr)
		}
	}
	return f
}

// setupFixtureSet is setupFixtures without the workspace's first snapshot.
func (x *LocalExecutor) setupFixtureSet(ctx context.Context, a *attempt, p *Provisioned) Fixtures {
	in := fixtureInput{plan: a.plan, secrets: p.Secrets, agent: x.agentInput(a.plan, p)}
	if p.Lease != nil {
		in.lease = p.Lease.environmentConfig()
	}
	names := append([]string{CanarySecretKey}, a.plan.Cell.RequiredCredentials...)
	canaries := map[string]string{CanarySecretKey: p.Canary}
	for _, c := range x.Canaries {
		if !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
		canaries[c.Name] = c.Value
	}
	if lc := x.liveCredential(a.plan); lc != "" && !slices.Contains(names, lc) {
		names = append(names, lc)
	}
	lf := a.plan.Cell.LoginFile
	for _, name := range names {
		login := lf != nil && name == lf.ID
		v, ok := canaries[name]
		if !ok && x.Credential != nil {
			if v, ok = x.Credential(name); ok && v != "" {
				// Registered before anything holding it is written: the secret's
				// storage, the seeded file, every log.
				if login {
					in.secrets = LoginSecrets(in.secrets, v)
				} else {
					in.secrets = in.secrets.WithCredentials(v)
				}
			}
		}
		if v == "" {
			in.missing = append(in.missing, name)
			continue
		}
		if login {
			in.stored = append(in.stored, storedSecret{name: name, value: v, kind: api.SecretKindLoginFile})
			in.login = &loginInput{credential: lf, value: v, root: cmp.Or(p.StateRoot, p.Root), home: p.Home}
			continue
		}
		in.stored = append(in.stored, storedSecret{name: name, value: v})
	}
	return setup(ctx, clientBoard{p.Instance}, in)
}

// setup sets the fixture graph company → secrets → environment → agent → task up
// through b (the public board API, as a user would). Every failure is the
// harness's (a refused board call, a missing credential, an unsupported environment)
// or a secret leak into a record; never the candidate's.
func setup(ctx context.Context, b SetupBoard, in fixtureInput) Fixtures {
	var submitted time.Time
	reg := fixture.NewRegistry(in.secrets)
	defs := []fixture.Definition{companyFixture(b, in), secretsFixture(b, in), environmentFixture(b, in)}
	if in.login != nil {
		defs = append(defs, loginFixture(in))
	}
	defs = append(defs, agentFixture(b, in))
	flow, _ := flows.Lookup(in.plan.Cell.Case.Flow)
	if flow.Manager {
		defs = append(defs, managerFixture(b, in))
	}
	if flow.Chat {
		defs = append(defs, workerFixture(b))
	}
	for _, d := range append(defs, taskFixture(b, in, &submitted)) {
		if err := reg.Register(d); err != nil {
			return Fixtures{Secrets: in.secrets, Fault: verdict.HarnessFault(err, false)}
		}
	}
	fx, err := reg.SetupAll(ctx)
	out := Fixtures{Set: fx, Secrets: in.secrets, Submitted: submitted}
	if rec, ok := fx.Record("company"); ok {
		out.CompanyID = rec.IDs["company"]
	}
	if rec, ok := fx.Record("environment"); ok {
		out.EnvironmentID = rec.IDs["environment"]
	}
	if rec, ok := fx.Record("task"); ok {
		out.TaskID, out.Identifier, out.CreatedTitle = rec.IDs["task"], rec.Metadata["identifier"], rec.Metadata["createdTitle"]
		out.ConversationID = rec.IDs["conversation"]
	}
	if rec, ok := fx.Record("worker"); ok {
		out.WorkerID = rec.IDs["worker"]
	}
	if rec, ok := fx.Record("agent"); ok {
		out.AgentID = rec.IDs["agent"]
	}
	if rec, ok := fx.Record("manager"); ok {
		out.ManagerID = rec.IDs["manager"]
	}
	out.LoginFile = seededOf(fx)
	if err != nil {
		out.Fault = setupFault(ctx, err, in.secrets)
		var se *fixture.SetupError
		if errors.As(err, &se) && se.Teardown != nil {
			out.CleanupErr = in.secrets.RedactText(se.Teardown.Error())
		}
	}
	return out
}

// setupFault is the fault of a failed fixture setup, its words redacted: the fault a
// definition returned (a board refusal, a missing credential, a leak into a record),
// a transient harness fault when the attempt's context ended during setup (the
// verdict sees an interruption first), a permanent harness fault otherwise.
func setupFault(ctx context.Context, err error, secrets *redact.Set) *verdict.Fault {
	words := errors.New(secrets.RedactText(err.Error()))
	if f := verdict.FaultOf(err); f != nil {
		return &verdict.Fault{Origin: f.Origin, Class: f.Class, Err: words}
	}
	if ctx.Err() != nil {
		return verdict.HarnessFault(fmt.Errorf("the attempt's deadline passed during fixture setup: %w", words), true)
	}
	return verdict.HarnessFault(words, false)
}

func companyFixture(b SetupBoard, in fixtureInput) fixture.Definition {
	return fixture.Definition{
		ID: "company",
		Setup: func(ctx context.Context, _ fixture.Resolved) (fixture.Record, error) {
			co, err := b.CreateCompany(ctx, "agentproof "+in.plan.Cell.Case.ID, "APF")
			if err != nil {
				return fixture.Record{}, flows.BoardFault("creating the company", err)
			}
			if err := co.Start(ctx); err != nil {
				return fixture.Record{}, flows.BoardFault("starting the company", err)
			}
			rec := fixture.Record{IDs: map[string]string{"company": co.ID()}, Metadata: map[string]string{"issuePrefix": "APF"}}
			if l, ok := co.(interface{ LocalEnvironmentID() string }); ok && l.LocalEnvironmentID() != "" {
				rec.IDs["localEnvironment"] = l.LocalEnvironmentID() // as the creation answered
			}
			return rec, nil
		},
		Teardown: func(ctx context.Context, rec fixture.Record, _ fixture.Resolved) error {
			err := b.Company(rec.IDs["company"]).Stop(ctx)
			if err == nil || controlplane.CodeOf(err) == controlplane.CodeMockNotRunning {
				return nil // stopped, or already stopped
			}
			return fmt.Errorf("stopping the company: %w", err)
		},
	}
}

func secretsFixture(b SetupBoard, in fixtureInput) fixture.Definition {
	return fixture.Definition{
		ID:           "secrets",
		Dependencies: []string{"company"},
		Setup: func(ctx context.Context, res fixture.Resolved) (fixture.Record, error) {
			co := b.Company(res["company"].IDs["company"])
			rec := fixture.Record{IDs: map[string]string{}, Metadata: map[string]string{}}
			for _, s := range in.stored {
				ref, err := co.CreateSecret(ctx, api.CreateSecretRequest{Name: strings.ToLower(s.name), Key: s.name, Value: s.value, Kind: s.kind})
				if err != nil {
					return fixture.Record{}, flows.BoardFault("storing secret "+s.name, err)
				}
				rec.IDs[s.name] = ref.SecretID
				rec.Metadata[s.name] = "secret_ref"
				if s.kind == api.SecretKindLoginFile {
					rec.Metadata[s.name] = string(api.SecretKindLoginFile)
				}
			}
			if len(in.missing) > 0 {
				return rec, verdict.HarnessFault(fmt.Errorf("missing credential %s", strings.Join(in.missing, ", ")), false)
			}
			return rec, nil
		},
	}
}

func environmentFixture(b SetupBoard, in fixtureInput) fixture.Definition {
	env := in.plan.Cell.Environment
	return fixture.Definition{
		ID:           "environment",
		Dependencies: []string{"company"},
		Setup: func(ctx context.Context, res fixture.Resolved) (fixture.Record, error) {
			co := b.Company(res["company"].IDs["company"])
			if in.lease != nil {
				// A sandbox or container environment of the control plane names the
				// campaign's lease; its heartbeat runner launches into it
				// (docs/environments.md).
				kind := env.Provider
				r, err := co.CreateEnvironment(ctx, api.CreateEnvironmentRequest{Name: env.ID, Kind: kind, Config: in.lease})
				if err != nil {
					return fixture.Record{}, flows.BoardFault("creating the "+kind+" environment", err)
				}
				return fixture.Record{IDs: map[string]string{"environment": r.ID}, Metadata: map[string]string{"kind": kind, "catalogEnvironment": env.ID}}, nil
			}
			if env.Driver != "local" {
				return fixture.Record{}, verdict.HarnessFault(fmt.Errorf("environment driver %q has no lease provider in this executor (local, sandbox and container only)", env.Driver), false)
			}
			if id := res["company"].IDs["localEnvironment"]; id != "" {
				// The company's creation named its local environment: no state read.
				return fixture.Record{IDs: map[string]string{"environment": id}, Metadata: map[string]string{"kind": controlplane.LocalEnvironment, "catalogEnvironment": env.ID}}, nil
			}
			st, err := b.Company(res["company"].IDs["company"]).Snapshot(ctx)
			if err != nil {
				return fixture.Record{}, flows.BoardFault("reading the company state", err)
			}
			for _, e := range st.Environments {
				if e.Kind == controlplane.LocalEnvironment {
					return fixture.Record{IDs: map[string]string{"environment": e.ID}, Metadata: map[string]string{"kind": e.Kind, "catalogEnvironment": env.ID}}, nil
				}
			}
			return fixture.Record{}, verdict.HarnessFault(errors.New("the instance has no local environment to discover"), false)
		},
	}
}

func agentFixture(b SetupBoard, in fixtureInput) fixture.Definition {
	p := in.plan.Cell.Profile
	deps := []string{"secrets", "environment"}
	if in.login != nil {
		deps = append(deps, loginFixtureID) // the HOME exists before the agent can run
	}
	return fixture.Definition{
		ID:           "agent",
		Dependencies: deps,
		Setup: func(ctx context.Context, res fixture.Resolved) (fixture.Record, error) {
			cfg, err := adapterConfig(in.plan, in.agent, res["secrets"].IDs, res["environment"].IDs["environment"])
			if err != nil {
				return fixture.Record{}, verdict.HarnessFault(err, false)
			}
			req := api.CreateAgentRequest{Name: "agentproof " + p.ID, Role: "engineer", AdapterConfig: cfg, CapabilityGrants: nonNilGrants(in.plan.Cell.CapabilityGrants)}
			r, err := b.Company(res["company"].IDs["company"]).CreateAgent(ctx, req)
			if err != nil {
				return fixture.Record{}, flows.BoardFault("creating the agent", err)
			}
			return fixture.Record{IDs: map[string]string{"agent": r.ID}, Metadata: map[string]string{"driver": p.Driver.String(), "profile": p.ID}}, nil
		},
	}
}

// nonNilGrants is the grants the board gets for an agent: the cell's declared
// capabilityGrants, [] for none (nothing is granted implicitly; docs/journeys.md
// "Capability grants").
func nonNilGrants(g []string) []string {
	if g == nil {
		return []string{}
	}
	return g
}

// managerFixture creates the manager agent of a blocker-guidance case (the registry
// creates a manager through the public API, as it creates every fixture):
// the same profile and adapter configuration as the worker, role manager, no
// capability grants. Nothing assigns it work: a run of it is unexpected, and the
// oracle sees it company-wide.
func managerFixture(b SetupBoard, in fixtureInput) fixture.Definition {
	p := in.plan.Cell.Profile
	return fixture.Definition{
		ID:           "manager",
		Dependencies: []string{"agent"},
		Setup: func(ctx context.Context, res fixture.Resolved) (fixture.Record, error) {
			cfg, err := adapterConfig(in.plan, in.agent, res["secrets"].IDs, res["environment"].IDs["environment"])
			if err != nil {
				return fixture.Record{}, verdict.HarnessFault(err, false)
			}
			req := api.CreateAgentRequest{Name: "agentproof manager " + p.ID, Role: "manager", AdapterConfig: cfg, CapabilityGrants: []string{}}
			r, err := b.Company(res["company"].IDs["company"]).CreateAgent(ctx, req)
			if err != nil {
				return fixture.Record{}, flows.BoardFault("creating the manager agent", err)
			}
			return fixture.Record{IDs: map[string]string{"manager": r.ID}, Metadata: map[string]string{"driver": p.Driver.String(), "profile": p.ID, "role": "manager"}}, nil
		},
	}
}

// workerFixture creates the handoff worker of a chat case (flows.ChatWorkerName,
// role engineer, no adapter configuration: no runner here takes its wakes, so the
// handed-off task waits for it).
func workerFixture(b SetupBoard) fixture.Definition {
	return fixture.Definition{
		ID:           "worker",
		Dependencies: []string{"company"},
		Setup: func(ctx context.Context, res fixture.Resolved) (fixture.Record, error) {
			r, err := b.Company(res["company"].IDs["company"]).CreateAgent(ctx, api.CreateAgentRequest{Name: flows.ChatWorkerName, Role: "engineer", CapabilityGrants: []string{}})
			if err != nil {
				return fixture.Record{}, flows.BoardFault("creating the handoff worker", err)
			}
			return fixture.Record{IDs: map[string]string{"worker": r.ID}, Metadata: map[string]string{"role": "engineer"}}, nil
		},
	}
}

// conversationSetup is the task fixture of a chat case: a conversation with the agent
// whose first human message is the case's prompt; the record's task is its backing
// task.
func conversationSetup(ctx context.Context, co CompanyBoard, agent, title, prompt string, submitted *time.Time) (fixture.Record, error) {
	*submitted = time.Now()
	r, err := co.CreateConversation(ctx, api.CreateConversationRequest{Title: title, AssigneeActorID: agent, Body: &prompt})
	if err != nil {
		return fixture.Record{}, flows.BoardFault("starting the conversation", err)
	}
	st, err := co.Snapshot(ctx)
	if err != nil {
		return fixture.Record{}, flows.BoardFault("reading the conversation", err)
	}
	cv := controlplane.ConversationOf(st, r.ID)
	if cv == nil {
		return fixture.Record{}, verdict.HarnessFault(fmt.Errorf("the conversation %s the board created is not in the company state", r.ID), false)
	}
	meta := map[string]string{}
	for _, t := range st.Tasks {
		if t.ID == cv.TaskID {
			meta["identifier"], meta["createdTitle"] = t.Identifier, t.Title
		}
	}
	return fixture.Record{IDs: map[string]string{"task": cv.TaskID, "conversation": cv.ID}, Metadata: meta}, nil
}

// taskFixture creates the task assigned to the agent (a chat case's conversation:
// conversationSetup); *submitted gets the time the human submitted it (turn 1).
func taskFixture(b SetupBoard, in fixtureInput, submitted *time.Time) fixture.Definition {
	cell, rc := in.plan.Cell, in.plan.Case
	flow, _ := flows.Lookup(cell.Case.Flow)
	return fixture.Definition{
		ID:           "task",
		Dependencies: []string{"agent"},
		Setup: func(ctx context.Context, res fixture.Resolved) (fixture.Record, error) {
			title := rc.Title
			if title == "" && !cell.Case.Untitled {
				title = "agentproof " + cell.ID + " " + rc.Nonce
			}
			if flow.Chat {
				return conversationSetup(ctx, b.Company(res["company"].IDs["company"]), res["agent"].IDs["agent"], title, rc.Prompt, submitted)
			}
			req := api.CreateIssueRequest{Title: title, AssigneeActorID: ptr(res["agent"].IDs["agent"])}
			if rc.Prompt != "" {
				req.Description = ptr(rc.Prompt)
			}
			if wm := cell.Case.WorkMode; wm != "" {
				req.WorkMode = &wm
			}
			co := b.Company(res["company"].IDs["company"])
			*submitted = time.Now()
			r, err := co.CreateIssue(ctx, req)
			if err != nil {
				return fixture.Record{}, flows.BoardFault("creating the task", err)
			}
			meta := map[string]string{}
			if st, err := co.Snapshot(ctx); err == nil {
				for _, t := range st.Tasks {
					if t.ID == r.ID {
						meta["identifier"], meta["createdTitle"] = t.Identifier, t.Title
					}
				}
			}
			return fixture.Record{IDs: map[string]string{"task": r.ID}, Metadata: meta}, nil
		},
	}
}

func ptr[T any](v T) *T { return &v }
