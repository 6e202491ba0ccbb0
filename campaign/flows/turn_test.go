package flows

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
)

const colourPayload = `{"questions":[{"id":"colour","prompt":"Which?","options":[{"id":"cobalt","label":"Cobalt"},{"id":"amber","label":"Amber"}]}]}`

func TestAnswerFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, payload, label, want, wantErr string
	}{
		{"picks the labelled option", colourPayload, "Cobalt", `{"answers":[{"optionId":"cobalt","optionLabel":"Cobalt","questionId":"colour"}]}`, ""},
		{"second option", colourPayload, "Amber", `{"answers":[{"optionId":"amber","optionLabel":"Amber","questionId":"colour"}]}`, ""},
		{"no such option", colourPayload, "Crimson", "", `offers no option labelled "Crimson"`},
		{"no questions", `{}`, "Cobalt", "", "offers no option"},
		{"unreadable payload", `[1,2`, "Cobalt", "", "no readable payload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := answerFor(&controlplane.Interaction{ID: "i-1", Payload: json.RawMessage(tt.payload)}, tt.label)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("answerFor = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

// FuzzAnswerFor: the interaction payload comes from the agent under test; answerFor
// never panics and an answer it builds names an option the payload offers.
func FuzzAnswerFor(f *testing.F) {
	f.Add([]byte(colourPayload), "Cobalt")
	f.Add([]byte(`{"questions":null}`), "")
	f.Add([]byte(`{"questions":[{"options":[{}]}]}`), "")
	f.Fuzz(func(t *testing.T, payload []byte, label string) {
		got, err := answerFor(&controlplane.Interaction{ID: "i", Payload: payload}, label)
		if err != nil {
			return
		}
		var a struct {
			Answers []struct {
				OptionLabel string `json:"optionLabel"`
			} `json:"answers"`
		}
		if json.Unmarshal(got, &a) != nil || len(a.Answers) != 1 || a.Answers[0].OptionLabel != label {
			t.Fatalf("answer %s for label %q", got, label)
		}
	})
}

func TestViewSettled(t *testing.T) {
	t.Parallel()
	done := &controlplane.Run{ID: "r1", Status: "succeeded"}
	running := &controlplane.Run{ID: "r2", Status: "running"}
	tests := []struct {
		name    string
		v       view
		n       int
		settled bool
	}{
		{"no run yet", view{}, 1, false},
		{"run running", view{runs: []*controlplane.Run{running}}, 1, false},
		{"run terminal, process ended", view{runs: []*controlplane.Run{done}, records: []api.HeartbeatRun{{State: api.RunFinished}}}, 1, true},
		{"run terminal, process still launching", view{runs: []*controlplane.Run{done}, records: []api.HeartbeatRun{{State: api.RunLaunching}}}, 1, false},
		{"second run not there", view{runs: []*controlplane.Run{done}}, 2, false},
	}
	for _, tt := range tests {
		if got := tt.v.settled(tt.n); got != tt.settled {
			t.Errorf("%s: settled(%d) = %v, want %v", tt.name, tt.n, got, tt.settled)
		}
	}
	refused := view{records: []api.HeartbeatRun{{RunID: "r9", State: api.RunNotOpened, Reason: "checkout refused"}}}
	if got := refused.refused(); !strings.Contains(got, "r9") || !strings.Contains(got, "checkout refused") {
		t.Errorf("refused() = %q", got)
	}
}

// countingBoard answers fixed heartbeat records and counts state reads.
type countingBoard struct {
	Board
	records   []api.HeartbeatRun
	snapshots int
}

func (b *countingBoard) Snapshot(context.Context) (controlplane.State, error) {
	b.snapshots++
	return controlplane.State{}, nil
}

func (b *countingBoard) HeartbeatRuns(context.Context) ([]api.HeartbeatRun, error) {
	return b.records, nil
}

// TestLookSettle: while a heartbeat record is opening or launching, a settle look
// reads the records alone (no run can be settled yet); otherwise it reads the state
// too, before the records again (look's order).
func TestLookSettle(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		state     api.HeartbeatState
		snapshots int
	}{{api.RunOpening, 0}, {api.RunLaunching, 0}, {api.RunFinished, 1}, {api.RunNotOpened, 1}} {
		b := &countingBoard{records: []api.HeartbeatRun{{State: tt.state}}}
		v, err := lookSettle(context.Background(), &Session{Board: b})
		if err != nil {
			t.Fatal(err)
		}
		if b.snapshots != tt.snapshots || v.settled(1) {
			t.Errorf("%s: %d state reads, settled %v; want %d, false", tt.state, b.snapshots, v.settled(1), tt.snapshots)
		}
	}
}
