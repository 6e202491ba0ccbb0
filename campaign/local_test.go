package campaign

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/match"
	"github.com/agentproof/agentproof/report"
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

func TestBoundedBuffer(t *testing.T) {
	t.Parallel()
	b := &boundedBuffer{max: 4}
	for _, s := range []string{"ab", "cdef", "gh"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := string(b.Bytes()); got != "abcd\n[agentproof: 4 more bytes dropped]\n" {
		t.Errorf("Bytes() = %q", got)
	}
}

// TestResultOf: every judged outcome maps to a result.json that validates, with the
// verdict, the expected verdict, the class, cleanup and the executor's facts.
func TestResultOf(t *testing.T) {
	t.Parallel()
	c := loadDefault(t)
	cell := c.Cell("calibration.fixture-hang.local.process-exit")
	if cell == nil {
		t.Fatal("no fixture-hang cell in the default catalog")
	}
	start := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	term := json.RawMessage(`{"summary":"timed out","timedOut":true}`)
	tests := []struct {
		name    string
		outcome AttemptOutcome
		verdict report.Verdict
		class   report.FailureClass
		cleanup string
	}{
		{"passed", AttemptOutcome{Matchers: []match.Outcome{{Kind: "run_status", Passed: true, Detail: "matched"}}, CleanupConfirmed: true,
			Facts: &AttemptFacts{IssueID: "t1", IssueIdentifier: "APF-1", RunIDs: []string{"r1"}, Termination: term, Evidence: []string{"workspace-manifest.json", "logs/flow.log"}}},
			report.Passed, "", report.CleanupPassed},
		{"deadline", AttemptOutcome{DeadlineMissed: "run r1 process", CleanupConfirmed: true}, report.Inconclusive, report.ProviderVariance, report.CleanupPassed},
		{"cleanup problem", AttemptOutcome{CleanupProblem: "temp root could not be removed"}, report.Failed, report.CleanupFailure, report.CleanupFailed},
		{"leak", AttemptOutcome{Leaks: []string{"workspace out.txt: exact secret value"}, CleanupConfirmed: true}, report.Failed, report.SecretLeak, report.CleanupPassed},
		{"error", AttemptOutcome{Err: errors.New("server start failed: boom"), CleanupConfirmed: true}, report.Inconclusive, report.TransientInfrastructure, report.CleanupPassed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := Judge(tt.outcome)
			ar := &AttemptResult{Plan: AttemptPlan{CampaignID: "c", Cell: cell, Attempt: 1, Dir: "c/x/attempt-1"},
				Outcome: tt.outcome, Judgement: j, Counted: Counted(cell.ExpectedVerdict, j.Verdict), StartedAt: start, FinishedAt: start.Add(1500 * time.Millisecond)}
			r := ResultOf(ar)
			if err := r.Validate("result"); err != nil {
				t.Fatal(err)
			}
			if r.Verdict != tt.verdict || r.FailureClass != tt.class || r.Cleanup != tt.cleanup || r.ExpectedVerdict != "inconclusive" || r.DurationMs != 1500 {
				t.Errorf("result = verdict %s class %s cleanup %s expected %s duration %d", r.Verdict, r.FailureClass, r.Cleanup, r.ExpectedVerdict, r.DurationMs)
			}
			if tt.verdict != report.Passed && r.Error != j.Reason {
				t.Errorf("error = %q, want the reason %q", r.Error, j.Reason)
			}
			if f := tt.outcome.Facts; f != nil && (r.IssueIdentifier != "APF-1" || len(r.RunIDs) != 1 || string(r.Termination) != string(term) || r.Evidence[0] != "logs/flow.log") {
				t.Errorf("facts not carried: %+v", r)
			}
			root := t.TempDir()
			if err := WriteResult(root, ar); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(root, "c/x/attempt-1", ResultFile))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := report.DecodeResult("result.json", b); err != nil {
				t.Fatal(err)
			}
		})
	}
}
