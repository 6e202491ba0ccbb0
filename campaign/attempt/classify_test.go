package attempt

import (
	"testing"

	"github.com/agentproof/agentproof/verdict"
)

func TestClassifyText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		msg  string
		want verdict.FailureClass
	}{
		// 1. bootstrap before task creation wins over everything after it.
		{"Error: browser bootstrap failed before task creation: unauthorized", verdict.TransientInfrastructure},
		{"bootstrap failed before task creation", verdict.TransientInfrastructure},
		// 2. secret leak.
		{"secret value leaked into api-state.json", verdict.SecretLeak},
		{"Secrets were written in plaintext to the log", verdict.SecretLeak},
		{"secret redaction failed for the transcript; cleanup failed", verdict.SecretLeak},
		{"leak of a secret", verdict.CandidateFailure}, // the rule's word order: "secret … leak"
		// 3. session-open rejection, not about credentials or models, retryable=false.
		{"ACP session open rejected by the runner (retryable=false)", verdict.CandidateFailure},
		{"session open rejected: invalid credential (retryable=false)", verdict.PermanentInfrastructure},
		{"session open rejected: model gone (retryable=false)", verdict.PermanentInfrastructure},
		// 4. retryable=false, effective_model_mismatch.
		{"runner refused: retryable=false", verdict.PermanentInfrastructure},
		{"effective_model_mismatch: asked for a, got b", verdict.PermanentInfrastructure},
		// 5. cleanup: transient when the transient pattern matches too.
		{"fixture teardown failed: fixture \"environment\" teardown: delete returned 404 twice", verdict.CleanupFailure},
		{"cleanup failed: server returned 503", verdict.TransientInfrastructure},
		{"lease was never released", verdict.CleanupFailure},
		{"teardown: connection refused", verdict.TransientInfrastructure},
		{"fixture setup failed and cleanup failed: missing credential OPENAI_API_KEY", verdict.CleanupFailure},
		// 6. permanent.
		{"missing credential OPENAI_API_KEY", verdict.PermanentInfrastructure},
		{"missing required credential DAYTONA_API_KEY", verdict.PermanentInfrastructure},
		{"missing fixture secret for the company", verdict.PermanentInfrastructure},
		{"invalid OpenAI api key", verdict.PermanentInfrastructure},
		{"POST /api/companies: 401 Unauthorized", verdict.PermanentInfrastructure},
		{"403 Forbidden", verdict.PermanentInfrastructure},
		{"model qualification failed", verdict.PermanentInfrastructure},
		{"model gpt-x is unsupported by this adapter", verdict.PermanentInfrastructure},
		{"artifact format incompatible with the runner", verdict.PermanentInfrastructure},
		{"runner_remote_protocol_incompatible", verdict.PermanentInfrastructure},
		{"runner_remote_unavailable", verdict.PermanentInfrastructure},
		{"the Daytona image has no immutable image digest", verdict.PermanentInfrastructure},
		// 7. protocol defects blame the candidate even when transient words follow.
		{"chat idle-state invariant broken; server closed", verdict.CandidateFailure},
		{"unrecoverable native session close", verdict.CandidateFailure},
		{"runner did not durably suspend before checkpoint", verdict.CandidateFailure},
		// 8. transient.
		{"GET /api/issues/1: 429 Too Many Requests", verdict.TransientInfrastructure},
		{"status 502 from the gateway", verdict.TransientInfrastructure},
		{"provider rate limit reached", verdict.TransientInfrastructure},
		{"read: ECONNRESET", verdict.TransientInfrastructure},
		{"dial tcp 127.0.0.1:4100: connect: connection refused", verdict.TransientInfrastructure},
		{"socket hang up", verdict.TransientInfrastructure},
		{"network error while polling", verdict.TransientInfrastructure},
		{"service unavailable", verdict.TransientInfrastructure},
		{"the server did not start within 30s", verdict.TransientInfrastructure},
		{"sandbox file-sync RPC timed out", verdict.TransientInfrastructure},
		{"timeout waiting for the server", verdict.TransientInfrastructure},
		{"harness interrupted", verdict.TransientInfrastructure},
		// 9. candidate words and the default.
		{"matcher message_contains: expected marker, observed nothing", verdict.CandidateFailure},
		{"issue status is todo, expected done", verdict.CandidateFailure},
		{"took 512ms", verdict.CandidateFailure}, // a number glued to a unit is not a status
		{"something odd", verdict.CandidateFailure},
		{"", verdict.CandidateFailure},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			t.Parallel()
			if got := ClassifyText(tt.msg); got != tt.want {
				t.Errorf("ClassifyText(%q) = %s, want %s", tt.msg, got, tt.want)
			}
		})
	}
}

// FuzzClassifyText checks that any message gets exactly one known class and that the
// classifier never panics on untrusted error text.
func FuzzClassifyText(f *testing.F) {
	for _, s := range []string{"secret leak", "429", "cleanup failed: 503", "server timed out", "", "\xff\xfe"} {
		f.Add(s)
	}
	known := map[verdict.FailureClass]bool{}
	for _, c := range verdict.FailureClasses {
		known[c] = true
	}
	f.Fuzz(func(t *testing.T, msg string) {
		if c := ClassifyText(msg); !known[c] {
			t.Fatalf("ClassifyText(%q) = %q, not a class", msg, c)
		}
	})
}

func BenchmarkClassifyText(b *testing.B) {
	msg := "flow question_resume_completion: waiting for the pending question: the run finished with status failed and no interaction"
	for b.Loop() {
		ClassifyText(msg)
	}
}
