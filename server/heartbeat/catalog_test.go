package heartbeat_test

import (
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/server/heartbeat"
)

// attempt is one cell played by hand: a real server with its runner, the Go client as
// the human, real agent processes.
type attempt struct {
	t         *testing.T
	in        *instance
	co        *client.Company
	cell      *catalog.Cell
	r         *catalog.RenderedCase
	workspace string
	actor     string
	task      string
}

func newAttempt(t *testing.T, cell *catalog.Cell, nonce string) *attempt {
	t.Helper()
	return newAttemptIn(t, startInstance(t), cell, nonce)
}

// newAttemptIn is newAttempt in the instance in.
func newAttemptIn(t *testing.T, in *instance, cell *catalog.Cell, nonce string) *attempt {
	t.Helper()
	ctx := context.Background()
	r, err := cell.Render(nonce)
	if err != nil {
		t.Fatal(err)
	}
	a := &attempt{t: t, in: in, co: in.company(ctx), cell: cell, r: r, workspace: t.TempDir()}
	cfg := map[string]any{"driver": cell.Profile.Driver.String(), "cwd": a.workspace}
	dc := maps.Clone(cell.Profile.DriverConfig)
	if dc == nil {
		dc = map[string]any{}
	}
	if strings.HasPrefix(cell.Profile.Driver.String(), "fixture:") {
		cfg["driverConfig"] = dc
	} else {
		cfg = builtinConfig(t, cell.Profile.Driver.String(), r, a.workspace)
		for k, v := range dc {
			cfg["driverConfig"].(map[string]any)[k] = v
		}
	}
	a.actor = createAgent(ctx, t, a.co, cfg)
	title := r.Title
	if title == "" { // process-exit has no title: the fixture never reads it
		title = "Runner E2E " + cell.Case.ID + " " + nonce
	}
	a.task, _ = createIssue(ctx, t, a.co, title, r.Prompt, cell.Case.WorkMode, a.actor)
	return a
}

func (a *attempt) company() *client.Company { return a.in.handle(a.co) }

// pending returns the task's pending interaction of kind, or nil.
func (a *attempt) pending(kind controlplane.InteractionKind) *controlplane.Interaction {
	for _, it := range snapshot(a.t, a.company()).Interactions {
		if it.TaskID == a.task && it.Status == "pending" && it.Kind == kind {
			return it
		}
	}
	return nil
}

func (a *attempt) resolve(id string, outcome controlplane.InteractionStatus, result any) {
	a.t.Helper()
	if _, err := a.company().ResolveInteraction(context.Background(), id, api.ResolveInteractionRequest{Outcome: outcome, Result: mustJSON(a.t, result)}); err != nil {
		a.t.Fatal(err)
	}
}

// play waits for each run and acts between runs as the case's flow prescribes, like
// the harness would; it stops when the state it waits for is not there.
func (a *attempt) play() {
	a.t.Helper()
	c := a.cell.Case
	runs := 1
	waitRuns(a.t, a.in, a.co, runs)
	for runs < c.ExpectedRunCount {
		switch c.Flow {
		case "question_resume_completion":
			q := a.pending("questions")
			if q == nil {
				return
			}
			if c.RestartServerBeforeAnswer {
				a.in.restart()
			}
			a.resolve(q.ID, "answered", map[string]any{"answers": []any{map[string]any{"questionId": "colour", "optionLabel": a.r.QuestionAnswer.OptionLabel}}})
		case "plan_revision_acceptance":
			q := a.pending("confirmation")
			if q == nil {
				return
			}
			if runs == 1 {
				a.resolve(q.ID, "rejected", map[string]any{"note": a.r.RevisionRequest})
			} else {
				a.resolve(q.ID, "accepted", map[string]any{})
			}
		case "warm_three_turn":
			if task := taskOf(snapshot(a.t, a.company()), a.task); task == nil || task.Status != "in_review" {
				return
			}
			if _, err := a.company().Comment(context.Background(), a.task, a.r.Followups[runs-1]); err != nil {
				a.t.Fatal(err)
			}
		default:
			return
		}
		runs++
		waitRuns(a.t, a.in, a.co, runs)
	}
}

func taskOf(st controlplane.State, id string) *controlplane.Task {
	for _, t := range st.Tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// observe builds the matchers' observation from the API state and the workspace.
func (a *attempt) observe(st controlplane.State) *match.Observation {
	a.t.Helper()
	obs := &match.Observation{HasMessage: true, RuntimeMode: a.cell.Profile.Generation, Environment: a.cell.Environment.ID,
		HasWorkspaceSnapshot: true, Files: map[string][]byte{}}
	for _, run := range st.Runs {
		if run.TaskID != a.task || run.ActorID != a.actor {
			continue
		}
		obs.RunStatus = string(run.Status)
		obs.Turns = append(obs.Turns, st.RunMessage(run))
	}
	obs.Message = strings.Join(obs.Turns, "\n")
	if t := taskOf(st, a.task); t != nil {
		obs.IssueStatus = string(t.Status)
	}
	err := filepath.WalkDir(a.workspace, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(a.workspace, p)
		obs.Files[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		a.t.Fatal(err)
	}
	return obs
}

// TestDefaultCatalogByHand drives every flow of the default catalog's cases through
// `agentproof serve`'s server and runner and the Go client, with real agent
// processes: every (driver, case) pair of the default matrix is one attempt on its own
// instance. The reference agent and fixture:pass must satisfy every matcher
// with the expected number of runs, every wake delivered exactly once (no duplicate
// run, none left behind); nop, wrong and the failing fixtures must fail a matcher.
func TestDefaultCatalogByHand(t *testing.T) {
	t.Parallel()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, cell := range cat.Cells {
		key := cell.Profile.Driver.String() + "/" + cell.Case.ID
		if seen[key] || strings.HasPrefix(cell.Profile.Driver.String(), "exec:") || strings.HasPrefix(cell.Profile.Driver.String(), "acp:") || strings.HasPrefix(cell.Profile.Driver.String(), "rpc:") {
			// Real-CLI cells need the executor's scripted model and the pinned CLIs; the
			// campaign's run tests drive them (internal/cli testdata/script/run_clis.txtar).
			// The ACP cells' flows answer permissions on the board: campaign/flows
			// TestACPFlows and the native-boundaries suites drive them.
			continue
		}
		switch cell.Case.Flow {
		case "lost_acknowledgement", "crash_retry", "server_crash_retry", "instruction_persistence",
			"plan_approval_completion", "blocker_guidance", "agent_chat":
			// a lossy proxy before a server restart, a killed agent process, a killed
			// server, an agent home saved and downloaded after a restart, a board
			// approval of the plan's exact revision, a manager/worker company guided by a
			// human comment, a conversation with /new and a handoff: played by the campaign's flows against the real server and
			// runner (campaign/flows flows_test.go, run_all.txtar), not by this by-hand driver
			continue
		}
		if strings.HasPrefix(cell.Profile.Driver.String(), "hostile:") {
			// The hostile agents attack the machine, then play the reference script; their
			// verdicts depend on the environment's containment, so they run through the
			// campaign in real sandboxes (internal/cli run_sandbox.txtar, the hostile suites).
			continue
		}
		if cell.Case.Verify != nil {
			// A verifier runs after the agent in the seeded workspace and its command
			// matchers grade what it did: played by the campaign (the coding-tasks
			// suites of run_all.txtar), not by this by-hand driver.
			continue
		}
		seen[key] = true
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			a := newAttempt(t, cell, "n0nce"+strings.ReplaceAll(cell.Case.ID, "-", ""))
			a.play()
			st := snapshot(t, a.company())
			// The plan_revisions oracle grades the campaign's composite JSON (documents
			// with their revisions and approvals, campaign/attempt observe), which this
			// by-hand observation does not build; the campaign's run tests grade it.
			// Nor the agent-call ledger the task_title oracle reads (the campaign saves it
			// from the server's calls route).
			specs := slices.DeleteFunc(slices.Clone(a.r.Matchers), func(m match.Spec) bool {
				return m.Kind == match.KindPlanRevisions || m.Kind == match.KindTaskTitle
			})
			matchers, err := match.CompileAll(specs)
			if err != nil {
				t.Fatal(err)
			}
			obs := a.observe(st)
			var fails []string
			for _, o := range match.Evaluate(matchers, obs) {
				if !o.Passed {
					fails = append(fails, string(o.Kind)+": "+o.Detail)
				}
			}
			shouldPass := cell.Profile.Driver.String() == "reference" || cell.Profile.Driver.String() == "fixture:pass"
			if !shouldPass {
				if len(fails) == 0 {
					t.Fatalf("every matcher passed for %s; observation %+v", cell.Profile.Driver.String(), obs)
				}
				return
			}
			if len(fails) > 0 {
				t.Fatalf("failing matchers: %v\nturns %q issue %s run %s", fails, obs.Turns, obs.IssueStatus, obs.RunStatus)
			}
			if len(st.Runs) != cell.Case.ExpectedRunCount {
				t.Errorf("%d runs, want %d", len(st.Runs), cell.Case.ExpectedRunCount)
			}
			for _, run := range st.Runs {
				if run.Status != "succeeded" {
					t.Errorf("run %s is %s, want succeeded", run.ID, run.Status)
				}
			}
			delivered := map[string]bool{}
			for _, run := range st.Runs {
				delivered[run.ID] = true
			}
			for _, w := range st.Wakes {
				if !delivered[heartbeat.RunID(a.co.ID(), w.ID)] {
					t.Errorf("wake %s (%s) was not delivered", w.ID, w.Reason)
				}
			}
			recs, err := a.company().HeartbeatRuns(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != cell.Case.ExpectedRunCount {
				t.Errorf("%d heartbeat records, want %d", len(recs), cell.Case.ExpectedRunCount)
			}
			for _, rec := range recs {
				if rec.Termination == nil || !rec.Termination.Started || rec.ProcessStartedAt == "" || rec.FinishedAt == "" ||
					string(rec.Usage) != "null" || len(rec.Evidence) != 2 {
					t.Errorf("record of %s is incomplete: %+v", rec.RunID, rec)
				}
			}
		})
	}
	if want := []string{"fixture:fail/process-exit", "fixture:hang/process-exit", "fixture:noisy/process-exit", "fixture:pass/process-exit"}; !containsAll(seen, want) {
		t.Errorf("the default matrix lacks %v", want)
	}
}

func containsAll(m map[string]bool, keys []string) bool {
	return !slices.ContainsFunc(keys, func(k string) bool { return !m[k] })
}
