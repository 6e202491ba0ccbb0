package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ids(cells []*Cell) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = c.ID
	}
	return out
}

func TestSelect(t *testing.T) {
	t.Parallel()
	// The fingerprint catalog with suite "plain" made manual-only: tricky has 4 cells
	// (two excluded), plain 1.
	c := loadFingerprintCatalog(t, func(s string) string {
		return strings.Replace(s, "    description: No metadata, no exclusions.\n", "    description: No metadata, no exclusions.\n    manualOnly: true\n", 1)
	})
	rows := []struct {
		name    string
		sel     Selector
		want    []string
		wantErr string
	}{
		{"all leaves out manual-only", Selector{All: true}, []string{
			"tricky.agent.local.hello", "tricky.agent.daytona.hello", "tricky.agent.daytona.resume", "tricky.agent-b.local.resume",
		}, ""},
		{"listing keeps manual-only", Selector{Listing: true}, []string{
			"tricky.agent.local.hello", "tricky.agent.daytona.hello", "tricky.agent.daytona.resume", "tricky.agent-b.local.resume", "plain.agent-b.local.hello",
		}, ""},
		{"listing with --all leaves out manual-only", Selector{Listing: true, All: true}, []string{
			"tricky.agent.local.hello", "tricky.agent.daytona.hello", "tricky.agent.daytona.resume", "tricky.agent-b.local.resume",
		}, ""},
		{"listing by dimension keeps manual-only", Selector{Listing: true, Profiles: []string{"agent-b"}}, []string{"tricky.agent-b.local.resume", "plain.agent-b.local.hello"}, ""},
		{"naming a manual-only suite selects it", Selector{Suites: []string{"plain"}}, []string{"plain.agent-b.local.hello"}, ""},
		{"manual-only reachable by id", Selector{IDs: []string{"plain.agent-b.local.hello"}}, []string{"plain.agent-b.local.hello"}, ""},
		{"OR within a dimension", Selector{Cases: []string{"hello", "resume"}, Profiles: []string{"agent-b"}}, []string{"tricky.agent-b.local.resume"}, ""},
		{"AND across dimensions", Selector{Environments: []string{"daytona"}, Cases: []string{"resume"}}, []string{"tricky.agent.daytona.resume"}, ""},
		{"groups are checked against the cells", Selector{Groups: []string{"core"}}, nil, "--group: unknown group: core"},
		{"ids keep matrix order", Selector{IDs: []string{"tricky.agent-b.local.resume", "tricky.agent.local.hello"}}, []string{"tricky.agent.local.hello", "tricky.agent-b.local.resume"}, ""},
		{"unknown values are all named", Selector{Suites: []string{"nope", "nope", "tricky"}, Profiles: []string{"ghost"}}, nil, "--suite: unknown suite: nope (known: plain, tricky); --profile: unknown profile: ghost (known: agent, agent-b)"},
		{"unknown id", Selector{IDs: []string{"tricky.agent-b.local.hello"}}, nil, "--id: unknown cell id: tricky.agent-b.local.hello"},
		{"id exclusive with all", Selector{IDs: []string{"tricky.agent.local.hello"}, All: true}, nil, "--id cannot be combined"},
		{"id exclusive with dimensions", Selector{IDs: []string{"tricky.agent.local.hello"}, Suites: []string{"tricky"}}, nil, "--id cannot be combined"},
		{"all exclusive with dimensions", Selector{All: true, Cases: []string{"hello"}}, nil, "--all cannot be combined"},
		{"zero matches", Selector{Profiles: []string{"agent-b"}, Environments: []string{"daytona"}}, nil, "selectors matched zero cells"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.Select(r.sel)
			if r.wantErr != "" {
				var se *SelectionError
				if !errors.As(err, &se) || !strings.Contains(se.Message, r.wantErr) {
					t.Fatalf("err = %v, want *SelectionError containing %q", err, r.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(r.want, ids(got)); diff != "" {
				t.Errorf("selection (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSelectGroupsAND(t *testing.T) {
	t.Parallel()
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Select(Selector{Groups: []string{"calibration", "warm"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"grader-calibration.reference.local.warm-three-turn", "grader-calibration.nop.local.warm-three-turn", "grader-calibration.wrong.local.warm-three-turn", "grader-calibration.leaky.local.warm-three-turn",
		"native-boundaries-warm.acp-reference-warm.local.acp-warm-three-turn", "native-boundaries-warm.acp-reference-warm.sandbox.acp-warm-three-turn",
		"native-boundaries-warm.acp-reference-per-turn.local.acp-warm-three-turn", "native-boundaries-warm.acp-reference-per-turn.sandbox.acp-warm-three-turn",
		"native-boundaries-warm.acp-wrong-warm.local.acp-warm-three-turn", "native-boundaries-warm.acp-wrong-warm.sandbox.acp-warm-three-turn",
		"native-boundaries-warm-pi.pi-warm.local.pi-warm-three-turn", "native-boundaries-warm-pi.pi-per-turn.local.pi-warm-three-turn"}
	if diff := cmp.Diff(want, ids(got)); diff != "" {
		t.Errorf("--group calibration --group warm (-want +got):\n%s", diff)
	}
	if !(Selector{}).IsEmpty() || (Selector{Cases: []string{"x"}}).IsEmpty() {
		t.Error("IsEmpty is wrong")
	}
}

func TestMatrixJobs(t *testing.T) {
	t.Parallel()
	c := loadFingerprintCatalog(t, nil)
	m := Matrix(c.Cells)
	if !m.NeedsDaytona {
		t.Error("NeedsDaytona = false")
	}
	got := map[string]int{}
	for _, j := range m.Include {
		got[j.ExecutionID] = j.TimeoutMinutes
	}
	want := map[string]int{
		"tricky.agent.local.hello":    25, // 8 min: 2·(8+1.5)+5 = 24 → floor 25
		"tricky.agent.daytona.hello":  40, // 15 min: 2·16.5+5 = 38 → Daytona floor 40
		"tricky.agent.daytona.resume": 40, // 12 min: 32 → Daytona floor 40
		"tricky.agent-b.local.resume": 32, // 12 min: 2·13.5+5 = 32
		"plain.agent-b.local.hello":   25,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("timeoutMinutes (-want +got):\n%s", diff)
	}
	for i := 1; i < len(m.Include); i++ {
		if m.Include[i-1].ExecutionID > m.Include[i].ExecutionID || m.ExecutionIDs[i-1] > m.ExecutionIDs[i] {
			t.Fatalf("jobs not sorted by executionId: %v", m.ExecutionIDs)
		}
	}
	cell := c.Cell("tricky.agent.daytona.resume")
	if diff := cmp.Diff([]string{"OPENAI_API_KEY", "DAYTONA_API_KEY"}, cell.RequiredCredentials); diff != "" {
		t.Errorf("required credentials (-want +got):\n%s", diff)
	}
}

// TestProfileEnvCredentials: the credentials a profile's driverConfig env refers to by
// name are listed (sorted by variable, once each); a reference by UUID is not a
// credential.
func TestProfileEnvCredentials(t *testing.T) {
	t.Parallel()
	ref := func(id string) map[string]any {
		return map[string]any{"type": "secret_ref", "secretId": id, "version": "latest"}
	}
	p := &Profile{DriverConfig: map[string]any{"env": map[string]any{
		"B_TOKEN": ref("OPENAI_API_KEY"), "A_TOKEN": ref("ANTHROPIC_API_KEY"), "C_TOKEN": ref("OPENAI_API_KEY"),
		"D_TOKEN": ref("123e4567-e89b-12d3-a456-426614174000"),
	}}}
	if diff := cmp.Diff([]string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}, p.EnvCredentials()); diff != "" {
		t.Errorf("EnvCredentials (-want +got):\n%s", diff)
	}
	if got := (&Profile{}).EnvCredentials(); len(got) != 0 {
		t.Errorf("no driverConfig: %v", got)
	}
}
