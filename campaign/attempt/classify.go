package attempt

import (
	"regexp"
	"strings"
	"sync"

	"github.com/agentproof/agentproof/verdict"
)

// The text rules of docs/harness.md ("Blame and retries") as regular expressions over
// the lower-cased message. "A followed later by B" rules are split into
// two expressions (see followedBy) to keep matching linear and cheap.
var (
	reBootstrapBeforeTask = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`bootstrap failed before task creation`) })
	reSecret              = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`secret`) })
	reLeakWord            = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`leak|plaintext|redaction`) })
	reSessionOpen         = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`session[ _-]?open`) })
	reReject              = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`reject`) })
	reRetryableFalse      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`retryable\s*[=:]\s*false`) })
	reCredentialOrModel   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`credential|api[ _-]?key|model`) })
	rePermanentMarker     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`retryable\s*[=:]\s*false|effective_model_mismatch`) })
	reCleanup             = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`clean[ -]?up|tear[ -]?down`) })
	reLease               = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`lease`) })
	reRelease             = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`releas`) })
	rePermanent           = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`missing (required )?credential|missing fixture secret|` +
			`invalid.{0,40}(credential|api[ _-]?key)|unauthori[sz]ed|forbidden|qualification|` +
			`model.{0,40}(unsupported|incompatible|not supported)|artifact.{0,40}incompatible|` +
			`runner_remote_\w*(incompatible|unavailable)|immutable image digest`)
	})
	reProtocolDefect = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`chat idle[- ]state invariant|unrecoverable native session close|` +
			`runner did not durably suspend before checkpoint`)
	})
	reTransientDirect = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b(429|5\d\d)\b|rate[ _-]?limit|econnreset|econnrefused|socket hang up|` +
			`network (error|interruption|timeout)|service unavailable`)
	})
	reTransientNoun = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b(provider|server|bootstrap|browser|webserver|health|daytona|sandbox|ingress|preview|connection|harness)\b`)
	})
	reTransientVerb = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b(temporar\w*|timed out|time out|timeouts?|closed|failed|unavailable|interrupt\w*|reset|refused|create\w*|start\w*|connect\w*)\b`)
	})
	reTimeout = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\btimeouts?\b`) })
)

// followedBy reports whether a match of first is followed (after its end, possibly
// with other text between) by a match of then. The earliest match of first leaves the
// longest rest, so checking it alone is enough.
func followedBy(msg string, first, then *regexp.Regexp) bool {
	loc := first.FindStringIndex(msg)
	return loc != nil && then.MatchString(msg[loc[1]:])
}

// isTransient is the transient pattern of rule 8.
func isTransient(msg string) bool {
	return reTransientDirect().MatchString(msg) ||
		followedBy(msg, reTransientNoun(), reTransientVerb()) ||
		followedBy(msg, reTimeout(), reTransientNoun())
}

// ClassifyText applies the ordered text rules (first match wins; docs/harness.md,
// "Blame and retries") to a message. agentproof applies them only
// to words that come from the agent under test or a live provider (cliFault): every
// fault of its own carries its origin and class as a value (verdict.Fault).
//
//  1. "bootstrap failed before task creation" → transient_infrastructure;
//  2. "secret … leak|plaintext|redaction" → secret_leak;
//  3. a session-open rejection with retryable=false that names no credential, API key
//     or model → candidate_failure;
//  4. "retryable=false" or "effective_model_mismatch" → permanent_infrastructure;
//  5. cleanup, teardown or lease … release → transient_infrastructure when the
//     transient pattern (rule 8) also matches, else cleanup_failure;
//  6. the permanent pattern (missing credential or fixture secret, invalid credential or
//     API key, unauthorized, forbidden, qualification, unsupported or incompatible
//     model, incompatible artifact, runner_remote_…incompatible/unavailable, immutable
//     image digest) → permanent_infrastructure;
//  7. known protocol-defect markers → candidate_failure;
//  8. the transient pattern (HTTP 429 or any 5xx number, rate limit, ECONNRESET,
//     ECONNREFUSED, socket hang up, network error/interruption/timeout, service
//     unavailable, a provider/server/… noun followed by timed out/failed/refused/…, or
//     a timeout followed by such a noun) → transient_infrastructure;
//  9. anything else → candidate_failure.
func ClassifyText(msg string) verdict.FailureClass {
	msg = strings.ToLower(msg)
	switch {
	case reBootstrapBeforeTask().MatchString(msg):
		return verdict.TransientInfrastructure
	case followedBy(msg, reSecret(), reLeakWord()):
		return verdict.SecretLeak
	case reSessionOpen().MatchString(msg) && reReject().MatchString(msg) &&
		reRetryableFalse().MatchString(msg) && !reCredentialOrModel().MatchString(msg):
		return verdict.CandidateFailure
	case rePermanentMarker().MatchString(msg):
		return verdict.PermanentInfrastructure
	case reCleanup().MatchString(msg) || followedBy(msg, reLease(), reRelease()):
		if isTransient(msg) {
			return verdict.TransientInfrastructure
		}
		return verdict.CleanupFailure
	case rePermanent().MatchString(msg):
		return verdict.PermanentInfrastructure
	case reProtocolDefect().MatchString(msg):
		return verdict.CandidateFailure
	case isTransient(msg):
		return verdict.TransientInfrastructure
	}
	return verdict.CandidateFailure
}
