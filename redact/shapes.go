package redact

import (
	"regexp"
)

// shape is one recognisable secret format. keep is the number of leading submatch groups
// kept verbatim on redaction (for example a key name before its value).
type shape struct {
	name string
	re   *regexp.Regexp
	keep bool
}

// shapes are the secret formats agentproof recognises (spec §10.2, issue "No secret
// leaves"): provider API keys, provider-named key assignments, bearer tokens, JWT-like
// strings and PEM private key blocks. Order matters: the more specific first.
var shapes = []shape{
	{name: "private-key-block", re: regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)`)},
	{name: "anthropic-key", re: regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{16,}`)},
	{name: "openai-key", re: regexp.MustCompile(`\bsk-(?:proj-)?[A-Za-z0-9_-]{16,}`)},
	{name: "provider-key-assignment", re: regexp.MustCompile(`(?i)((?:openai|anthropic|openrouter|daytona|xai|gemini)[-_]?(?:api)?[-_]?key["'\s:=]+)[A-Za-z0-9._-]{12,}`), keep: true},
	{name: "bearer-token", re: regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9._~+/-]{16,}=*`), keep: true},
	{name: "jwt", re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)},
}

// findShape returns the first shape found in b (earliest offset) and its offset.
func findShape(b []byte) (string, int, bool) {
	best, at := "", -1
	for _, sh := range shapes {
		if loc := sh.re.FindIndex(b); loc != nil && (at < 0 || loc[0] < at) {
			best, at = sh.name, loc[0]
		}
	}
	return best, at, at >= 0
}

// redactShapes replaces every secret-shaped value in text.
func redactShapes(text string) string {
	for _, sh := range shapes {
		if sh.keep {
			text = sh.re.ReplaceAllString(text, "${1}"+RedactedShape)
		} else {
			text = sh.re.ReplaceAllLiteralString(text, RedactedShape)
		}
	}
	return text
}

// HasShape reports whether text contains a secret-shaped value (used by catalog
// validation to refuse raw keys in declarative data).
func HasShape(text string) bool {
	_, _, ok := findShape([]byte(text))
	return ok
}
