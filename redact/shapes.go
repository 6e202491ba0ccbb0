package redact

import (
	"bytes"
	"regexp"
)

// shape is one recognisable secret format. keep is the number of leading submatch groups
// kept verbatim on redaction (for example a key name before its value).
//
// lits is a prefilter: the regular expression can only match text that contains one of
// them (compared lower-case when fold is set), so clean text — the common case — costs
// a few substring searches instead of a regular-expression pass per shape.
type shape struct {
	name string
	re   *regexp.Regexp
	keep bool
	lits []string
	fold bool
}

// shapes are the secret formats agentproof recognises (spec §10.2, issue "No secret
// leaves"): provider API keys, provider-named key assignments, bearer tokens, JWT-like
// strings and PEM private key blocks. Order matters: the more specific first.
var shapes = []shape{
	{name: "private-key-block", re: regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)`), lits: []string{"PRIVATE KEY-----"}},
	{name: "anthropic-key", re: regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{16,}`), lits: []string{"sk-ant-"}},
	{name: "openai-key", re: regexp.MustCompile(`\bsk-(?:proj-)?[A-Za-z0-9_-]{16,}`), lits: []string{"sk-"}},
	{name: "provider-key-assignment", re: regexp.MustCompile(`(?i)((?:openai|anthropic|openrouter|daytona|xai|gemini)[-_]?(?:api)?[-_]?key["'\s:=]+)[A-Za-z0-9._-]{12,}`), keep: true,
		lits: []string{"openai", "anthropic", "openrouter", "daytona", "xai", "gemini"}, fold: true},
	{name: "bearer-token", re: regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9._~+/-]{16,}=*`), keep: true, lits: []string{"bearer"}, fold: true},
	{name: "jwt", re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), lits: []string{"eyJ"}},
}

// mayMatch reports whether b (and lower, its lower-cased form, computed on demand)
// contains one of sh's literals.
func (sh *shape) mayMatch(b []byte, lower *[]byte) bool {
	hay := b
	if sh.fold {
		if *lower == nil {
			*lower = bytes.ToLower(b)
		}
		hay = *lower
	}
	for _, l := range sh.lits {
		if bytes.Contains(hay, []byte(l)) {
			return true
		}
	}
	return false
}

// findShape returns the first shape found in b (earliest offset) and its offset.
func findShape(b []byte) (string, int, bool) {
	best, at := "", -1
	var lower []byte
	for i := range shapes {
		sh := &shapes[i]
		if !sh.mayMatch(b, &lower) {
			continue
		}
		if loc := sh.re.FindIndex(b); loc != nil && (at < 0 || loc[0] < at) {
			best, at = sh.name, loc[0]
		}
	}
	return best, at, at >= 0
}

// redactShapes replaces every secret-shaped value in text.
func redactShapes(text string) string {
	for i := range shapes {
		sh := &shapes[i]
		var lower []byte
		if !sh.mayMatch([]byte(text), &lower) {
			continue
		}
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
