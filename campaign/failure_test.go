package campaign

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentproof/agentproof/redact"
)

func TestClassifyText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		msg  string
		want FailureClass
	}{
		// 1. bootstrap before task creation wins over everything after it.
		{"Error: browser bootstrap failed before task creation: unauthorized", TransientInfrastructure},
		{"bootstrap failed before task creation", TransientInfrastructure},
		// 2. secret leak.
		{"secret value leaked into api-state.json", SecretLeak},
		{"Secrets were written in plaintext to the log", SecretLeak},
		{"secret redaction failed for the transcript; cleanup failed", SecretLeak},
		{"leak of a secret", CandidateFailure}, // the spec's order: "secret … leak"
		// 3. session-open rejection, not about credentials or models, retryable=false.
		{"ACP session open rejected by the runner (retryable=false)", CandidateFailure},
		{"session open rejected: invalid credential (retryable=false)", PermanentInfrastructure},
		{"session open rejected: model gone (retryable=false)", PermanentInfrastructure},
		// 4. retryable=false, effective_model_mismatch.
		{"runner refused: retryable=false", PermanentInfrastructure},
		{"effective_model_mismatch: asked for a, got b", PermanentInfrastructure},
		// 5. cleanup: transient when the transient pattern matches too.
		{"fixture teardown failed: fixture \"environment\" teardown: delete returned 404 twice", CleanupFailure},
		{"cleanup failed: server returned 503", TransientInfrastructure},
		{"lease was never released", CleanupFailure},
		{"teardown: connection refused", TransientInfrastructure},
		{"fixture setup failed and cleanup failed: missing credential OPENAI_API_KEY", CleanupFailure},
		// 6. permanent.
		{"missing credential OPENAI_API_KEY", PermanentInfrastructure},
		{"missing required credential DAYTONA_API_KEY", PermanentInfrastructure},
		{"missing fixture secret for the company", PermanentInfrastructure},
		{"invalid OpenAI api key", PermanentInfrastructure},
		{"POST /api/companies: 401 Unauthorized", PermanentInfrastructure},
		{"403 Forbidden", PermanentInfrastructure},
		{"model qualification failed", PermanentInfrastructure},
		{"model gpt-x is unsupported by this adapter", PermanentInfrastructure},
		{"artifact format incompatible with the runner", PermanentInfrastructure},
		{"runner_remote_protocol_incompatible", PermanentInfrastructure},
		{"runner_remote_unavailable", PermanentInfrastructure},
		{"the Daytona image has no immutable image digest", PermanentInfrastructure},
		// 7. protocol defects blame the candidate even when transient words follow.
		{"chat idle-state invariant broken; server closed", CandidateFailure},
		{"unrecoverable native session close", CandidateFailure},
		{"runner did not durably suspend before checkpoint", CandidateFailure},
		// 8. transient.
		{"GET /api/issues/1: 429 Too Many Requests", TransientInfrastructure},
		{"status 502 from the gateway", TransientInfrastructure},
		{"provider rate limit reached", TransientInfrastructure},
		{"read: ECONNRESET", TransientInfrastructure},
		{"dial tcp 127.0.0.1:4100: connect: connection refused", TransientInfrastructure},
		{"socket hang up", TransientInfrastructure},
		{"network error while polling", TransientInfrastructure},
		{"service unavailable", TransientInfrastructure},
		{"the server did not start within 30s", TransientInfrastructure},
		{"sandbox file-sync RPC timed out", TransientInfrastructure},
		{"timeout waiting for the server", TransientInfrastructure},
		{"harness interrupted", TransientInfrastructure},
		// 9. candidate words and the default.
		{"matcher message_contains: expected marker, observed nothing", CandidateFailure},
		{"issue status is todo, expected done", CandidateFailure},
		{"took 512ms", CandidateFailure}, // a number glued to a unit is not a status
		{"something odd", CandidateFailure},
		{"", CandidateFailure},
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

func TestClassifyError(t *testing.T) {
	t.Parallel()
	leakErr := redact.NewSet("topsecretvalue-123456").Check("result.json", []byte("x topsecretvalue-123456"), false)
	if leakErr == nil {
		t.Fatal("redact found no leak; the test is broken")
	}
	tests := []struct {
		name string
		err  error
		want FailureClass
	}{
		{"nil has no class", nil, ""},
		{"typed class wins over its text", &ClassError{Class: ProviderVariance, Err: errors.New("missing credential X")}, ProviderVariance},
		{"wrapped typed class", fmt.Errorf("flow: %w", &ClassError{Class: TransientInfrastructure, Err: errors.New("x")}), TransientInfrastructure},
		{"leak overrides a typed class", errors.Join(&ClassError{Class: ProviderVariance, Err: errors.New("slow")}, leakErr), SecretLeak},
		{"record leak", fmt.Errorf("fixture: %w", ErrSecretInRecord), SecretLeak},
		{"cancelled", fmt.Errorf("waiting for the run: %w", context.Canceled), TransientInfrastructure},
		{"deadline exceeded in a call", fmt.Errorf("GET: %w", context.DeadlineExceeded), TransientInfrastructure},
		{"text rules", errors.New("401 unauthorized"), PermanentInfrastructure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ClassifyError(tt.err); got != tt.want {
				t.Errorf("ClassifyError(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestFailureClassWords(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, c := range FailureClasses {
		w := c.Words()
		if w == "" || w == string(c) || seen[w] {
			t.Errorf("%s: words %q are empty, the raw value or duplicated", c, w)
		}
		seen[w] = true
	}
	if got := FailureClass("other").Words(); got != "other" {
		t.Errorf("unknown class words = %q", got)
	}
}

func TestRetryable(t *testing.T) {
	t.Parallel()
	want := map[FailureClass]bool{TransientInfrastructure: true, ProviderVariance: true}
	for _, c := range append(FailureClasses, "") {
		if got := Retryable(c); got != want[c] {
			t.Errorf("Retryable(%q) = %v, want %v", c, got, want[c])
		}
	}
}

// FuzzClassifyText checks that any message gets exactly one known class and that the
// classifier never panics on untrusted error text.
func FuzzClassifyText(f *testing.F) {
	for _, s := range []string{"secret leak", "429", "cleanup failed: 503", "server timed out", "", "\xff\xfe"} {
		f.Add(s)
	}
	known := map[FailureClass]bool{}
	for _, c := range FailureClasses {
		known[c] = true
	}
	f.Fuzz(func(t *testing.T, msg string) {
		if c := ClassifyText(msg); !known[c] {
			t.Fatalf("ClassifyText(%q) = %q, not a class", msg, c)
		}
	})
}
