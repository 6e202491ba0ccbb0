package result

import (
	"encoding/json"
	"testing"

	"github.com/agentproof/agentproof/verdict"
)

// TestHeadline: the reason of an attempt failed for the candidate's fault is led by its
// run's termination summary only when the run ended abnormally (left open, timed out,
// flooded, killed, exited non-zero, never started), and not when the reason quotes it
// already; the reason of another class (a secret leak) is left as it is.
func TestHeadline(t *testing.T) {
	t.Parallel()
	const reason = `matcher failed: #4 run_status: expected "succeeded"; observed "failed"`
	tests := []struct {
		name, termination, reason, want string
	}{
		{"left open", `{"summary":"exited 0 without completing its run","started":true,"exitCode":0,"leftOpen":true}`, reason,
			"exited 0 without completing its run; " + reason},
		{"timed out", `{"summary":"timed out after 2s; killed by SIGKILL","started":true,"exitCode":null,"signal":"SIGKILL","timedOut":true}`, reason,
			"timed out after 2s; killed by SIGKILL; " + reason},
		{"exited non-zero", `{"summary":"exited with code 3 after 1s","started":true,"exitCode":3}`, reason, "exited with code 3 after 1s; " + reason},
		{"output exceeded", `{"summary":"output exceeded its budget","started":true,"outputExceeded":true}`, reason, "output exceeded its budget; " + reason},
		{"not started", `{"summary":"not started: no such file","started":false}`, "", "not started: no such file"},
		{"reason quotes it", `{"summary":"exited with code 3 after 1s","started":true,"exitCode":3}`, "run r1 failed: exited with code 3 after 1s",
			"run r1 failed: exited with code 3 after 1s"},
		{"completed normally", `{"summary":"exited with code 0 after 1s","started":true,"exitCode":0}`, reason, reason},
		{"no termination", ``, reason, reason},
		{"unreadable termination", `[1]`, reason, reason},
		{"redacted termination", `{"redacted":"termination summary withheld"}`, reason, reason},
	}
	for _, tt := range tests {
		if got := Headline(verdict.CandidateFailure, tt.reason, json.RawMessage(tt.termination)); got != tt.want {
			t.Errorf("%s: Headline = %q, want %q", tt.name, got, tt.want)
		}
	}
	exited70 := json.RawMessage(`{"summary":"exited with code 70 after 45ms","started":true,"exitCode":70}`)
	if got := Headline(verdict.SecretLeak, "secret leak: in the workspace", exited70); got != "secret leak: in the workspace" {
		t.Errorf("secret leak: Headline = %q, want the reason alone", got)
	}
}
