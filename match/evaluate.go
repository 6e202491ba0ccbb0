package match

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agentproof/agentproof/canonjson"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Evaluate evaluates every matcher against obs and returns one Outcome per matcher, in
// the matchers' order (deterministic: the same matchers and observation always give the
// same outcomes). A nil obs is an observation with no evidence (every matcher not
// reached). Matchers and the observation are only read, so any number of Evaluate calls
// may run concurrently on the same values; derived evidence (the normalised message, the
// decoded JSON document) is computed once per call and shared by its matchers.
func Evaluate(matchers []Matcher, obs *Observation) []Outcome {
	ev := newEvidence(obs)
	out := make([]Outcome, len(matchers))
	for i, m := range matchers {
		out[i] = m.evaluate(ev)
	}
	return out
}

// Evaluate evaluates one matcher against obs; see the package-level Evaluate.
func (m Matcher) Evaluate(obs *Observation) Outcome {
	return m.evaluate(newEvidence(obs))
}

// result is what a kind found, before redaction and detail rendering.
type result struct {
	passed   bool
	missing  string // non-empty: evidence missing, the reason
	observed any
	hint     string // a failed text comparison: the unusual characters it involves (unicodeHint)
}

func (m Matcher) evaluate(ev *evidence) Outcome {
	c := m.c
	if c == nil {
		return Outcome{Detail: "matcher was not compiled; build it with match.Compile"}
	}
	r := c.eval(ev)
	o := Outcome{
		Kind:     c.spec.Kind,
		Passed:   r.passed && r.missing == "",
		Expected: ev.redactValue(c.display),
		Observed: ev.bound(r.observed),
	}
	switch {
	case r.missing != "":
		o.NotReached = true
		o.Detail = truncate("not reached: "+ev.redactString(r.missing), DetailLimit)
	case o.Passed:
		o.Detail = "matched"
	default:
		o.Detail = ev.failureDetail(c, o.Observed, r.hint)
	}
	return o
}

// eval grades the evidence against the compiled matcher by its kind. A result with
// missing set means the evidence the kind reads was not observed; a kind with no
// evaluator is missing too.
func (c *compiled) eval(ev *evidence) result {
	if ks, ok := kindSpecs[c.spec.Kind]; ok {
		return ks.eval(c, ev)
	}
	return result{missing: fmt.Sprintf("kind %q has no evaluator", c.spec.Kind)}
}

// evalMessageKind grades the message kinds against the message of the matcher's turn
// (the whole message without one).
func evalMessageKind(c *compiled, ev *evidence) result {
	msg, missing := ev.message(c.turn, c.form)
	if missing != "" {
		return result{missing: missing}
	}
	return c.evalMessage(msg)
}

// evalField grades a kind that compares one observed field exactly with the expected
// value; missing says what was not observed when the field is empty.
func evalField(field func(*Observation) string, missing string) func(*compiled, *evidence) result {
	return func(c *compiled, ev *evidence) result { return equalField(field(ev.obs), c.text, missing) }
}

// onObservation adapts an evaluation that reads only the observation.
func onObservation(eval func(*compiled, *Observation) result) func(*compiled, *evidence) result {
	return func(c *compiled, ev *evidence) result { return eval(c, ev.obs) }
}

// evalFile grades the file kinds against the workspace snapshot, or the downloaded
// agent home when the matcher's source is the agent home: file_exists and
// file_absent by presence, file_exact and file_contains by the file's content after
// the matcher's normalization (byte for byte when the expected content is binary),
// and a present file's SHA-256 when the matcher pins one. Observed is the content's
// prefix (hex for binary content).
func (c *compiled) evalFile(ev *evidence) result {
	obs := ev.obs
	files := obs.Files
	if c.spec.Source == SourceAgentHome {
		if !obs.HasHomeFiles {
			return result{missing: "the agent home was not downloaded"}
		}
		files = obs.HomeFiles
	} else if !obs.HasWorkspaceSnapshot {
		return result{missing: "no workspace snapshot was taken"}
	}
	content, ok := files[c.file]
	var r result
	switch c.spec.Kind {
	case KindFileExists:
		r = result{passed: ok, observed: ok}
	case KindFileAbsent:
		if ok {
			return result{observed: ev.prefix(content)}
		}
		return result{passed: true, observed: false}
	case KindFileExact:
		if !ok {
			return result{}
		}
		got := c.form.applyBytes(content)
		switch {
		case c.binary && got == c.text:
			r = result{passed: true, observed: hex.EncodeToString([]byte(ev.prefix(content)))}
		case c.binary:
			r = result{observed: hex.EncodeToString([]byte(ev.prefix(content))), hint: bytesHint([]byte(c.text), content)}
		case got == c.text:
			r = result{passed: true, observed: ev.prefix(content)}
		default:
			r = result{observed: ev.prefix(content), hint: unicodeHint(c.text, got, 0, true)}
		}
	default:
		if !ok {
			return result{}
		}
		got := c.form.applyBytes(content)
		if strings.Contains(got, c.text) {
			r = result{passed: true, observed: ev.prefix(content)}
		} else {
			r = result{observed: ev.prefix(content), hint: unicodeHint(c.text, got, 0, false)}
		}
	}
	if ok && c.spec.SHA256 != "" {
		if got := sha256Hex(content); got != c.spec.SHA256 {
			r.passed = false
			r.hint = joinHint(r.hint, fmt.Sprintf("the file's SHA-256 is %s (%d bytes), not %s", got, len(content), c.spec.SHA256))
		}
	}
	return r
}

// evalJSONPath grades json_path: the query over the observed JSON document must
// select exactly one node equal (canonically) to the expected value. A failure's
// observed value is {selected, nodes: [{path, value}]}.
func (c *compiled) evalJSONPath(ev *evidence) result {
	doc, missing := ev.document()
	if missing != "" {
		return result{missing: missing}
	}
	nodes := c.jpath.SelectLocated(doc)
	if len(nodes) == 1 {
		if got, err := canonjson.Sorted(nodes[0].Node); err == nil && bytes.Equal(got, c.wantJS) {
			return result{passed: true, observed: nodes[0].Node}
		}
	}
	// A failure lists every selected node with its RFC 9535 normalized path
	// ($['runs'][1]['status']), so that the detail says where each value is.
	located := make([]any, len(nodes))
	for i, n := range nodes {
		located[i] = canonjson.Object{{Key: "path", Value: n.Path.String()}, {Key: "value", Value: n.Node}}
	}
	return result{observed: canonjson.Object{
		{Key: "selected", Value: len(nodes)},
		{Key: "nodes", Value: located},
	}}
}

// evalJSONSchema grades json_schema: the observed JSON document must be valid against
// the compiled schema. A failure's observed value is {errors, value}.
func (c *compiled) evalJSONSchema(ev *evidence) result {
	doc, missing := ev.document()
	if missing != "" {
		return result{missing: missing}
	}
	err := c.schema.Validate(doc)
	if err == nil {
		return result{passed: true}
	}
	return result{observed: canonjson.Object{
		{Key: "errors", Value: schemaErrors(err)},
		{Key: "value", Value: doc},
	}}
}

func (c *compiled) evalMessage(msg string) result {
	switch c.spec.Kind {
	case KindMessageExact:
		if msg == c.text {
			return result{passed: true, observed: msg}
		}
		return result{observed: msg, hint: unicodeHint(c.text, msg, 0, true)}
	case KindMessageContains:
		if strings.Contains(msg, c.text) {
			return result{passed: true, observed: msg}
		}
		return result{observed: msg, hint: unicodeHint(c.text, msg, 0, false)}
	case KindMessageOccurrences:
		n := 0
		if c.text != "" {
			n = strings.Count(msg, c.text) // non-overlapping, left to right
		}
		return result{passed: n == c.count, observed: n}
	case KindMessageRegex:
		return result{passed: c.re.MatchString(msg), observed: msg}
	default: // KindMessageOrdered
		pos := 0
		for _, item := range c.items {
			i := strings.Index(msg[pos:], item)
			if i < 0 {
				return result{observed: msg, hint: unicodeHint(item, msg, pos, false)}
			}
			pos += i + len(item)
		}
		return result{passed: true, observed: msg}
	}
}

func equalField(got, want, missing string) result {
	if got == "" {
		return result{missing: missing}
	}
	return result{passed: got == want, observed: got}
}

// schemaErrors lists a validation failure's leaf errors as "<instance location>:
// <message>", sorted and without duplicates.
func schemaErrors(err error) []string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{err.Error()}
	}
	var out []string
	for _, u := range ve.BasicOutput().Errors {
		if u.Error == nil {
			continue
		}
		loc := u.InstanceLocation
		if loc == "" {
			loc = "/"
		}
		out = append(out, fmt.Sprintf("%s: %s", loc, u.Error.String()))
	}
	if len(out) == 0 {
		out = append(out, ve.Error())
	}
	sort.Strings(out)
	j := 0
	for i, s := range out {
		if i == 0 || s != out[j-1] {
			out[j] = s
			j++
		}
	}
	return out[:j]
}

// evidence is one Evaluate call's view of an observation, with derived values computed
// on first use. It is used by one goroutine only.
type evidence struct {
	obs *Observation

	norm     [formCount]string // the whole message, normalised, per Unicode form
	normDone [formCount]bool
	turns    [][formCount]string
	turnDone [][formCount]bool

	doc     any
	docMiss string
	docDone bool

	secrets     []string
	secretsDone bool

	redactedIn, redactedOut string // last redactString input and result
	redactedOK              bool
}

func newEvidence(obs *Observation) *evidence {
	if obs == nil {
		obs = &Observation{}
	}
	return &evidence{obs: obs}
}

// message returns the normalised message (turn 0) or turn's message in Unicode form f
// (first f, then Normalize: NFKC turns a no-break space into a space, which Normalize
// then treats as one), or why it is missing.
func (ev *evidence) message(turn int, f unicodeForm) (string, string) {
	if turn == 0 {
		if !ev.obs.HasMessage {
			return "", "no message was observed"
		}
		if !ev.normDone[f] {
			ev.norm[f], ev.normDone[f] = Normalize(f.apply(ev.obs.Message)), true
		}
		return ev.norm[f], ""
	}
	if turn > len(ev.obs.Turns) {
		return "", fmt.Sprintf("turn %d was not observed (%d turns observed)", turn, len(ev.obs.Turns))
	}
	if ev.turns == nil {
		ev.turns = make([][formCount]string, len(ev.obs.Turns))
		ev.turnDone = make([][formCount]bool, len(ev.obs.Turns))
	}
	if !ev.turnDone[turn-1][f] {
		ev.turns[turn-1][f], ev.turnDone[turn-1][f] = Normalize(f.apply(ev.obs.Turns[turn-1])), true
	}
	return ev.turns[turn-1][f], ""
}

// document returns the decoded JSON document (numbers as json.Number), or why it is
// missing.
func (ev *evidence) document() (any, string) {
	if !ev.docDone {
		ev.docDone = true
		switch {
		case ev.obs.JSON == nil:
			ev.docMiss = "no JSON document was observed"
		default:
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(ev.obs.JSON))
			if err != nil {
				ev.docMiss = "the observed JSON document does not parse: " + err.Error()
			} else {
				ev.doc = doc
			}
		}
	}
	return ev.doc, ev.docMiss
}

// decodeObserved decodes the observation's composite JSON document (Observation.JSON)
// into a T for the evaluators of the journey kinds; missing says why it could not (no
// document observed, or one that does not parse: the words of document), "" when it
// was decoded.
func decodeObserved[T any](obs *Observation) (st T, missing string) {
	if obs.JSON == nil {
		return st, "no JSON document was observed"
	}
	if err := json.Unmarshal(obs.JSON, &st); err != nil {
		return st, "the observed JSON document does not parse: " + err.Error()
	}
	return st, ""
}

// bound returns v redacted; a string (a message or file content) is also cut to at most
// DetailLimit bytes, ending with truncMark when cut. Only the kept prefix (plus the
// longest secret, so a secret straddling the cut is still found) is scanned for secrets.
func (ev *evidence) bound(v any) any {
	s, ok := v.(string)
	if !ok || len(s) <= DetailLimit {
		return ev.redactValue(v)
	}
	s = s[:runeCut(s, ev.scanLimit())]
	return truncate(ev.redactString(s), DetailLimit)
}

// prefix returns the first scanLimit bytes of content as a string (the only part bound
// keeps), so a large file is never copied whole.
func (ev *evidence) prefix(content []byte) string {
	return string(content[:min(len(content), ev.scanLimit())])
}

// scanLimit is how much of a long string bound must keep and redact: DetailLimit plus
// the longest secret form, plus one byte so a cut string is still longer than
// DetailLimit.
func (ev *evidence) scanLimit() int {
	longest := 0
	for _, f := range ev.secretForms() {
		longest = max(longest, len(f))
	}
	return DetailLimit + longest + 1
}

// redaction replaces a secret in details and values.
const redaction = "[REDACTED]"

// secretForms returns every form of every observation secret that could appear in an
// outcome: as given, normalised (the message kinds show normalised text) and
// JSON-escaped (details embed JSON), longest first so a secret is redacted before its
// substrings.
func (ev *evidence) secretForms() []string {
	if ev.secretsDone {
		return ev.secrets
	}
	ev.secretsDone = true
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			ev.secrets = append(ev.secrets, s)
		}
	}
	for _, s := range ev.obs.Secrets {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		for _, f := range []string{s, Normalize(s)} {
			add(f)
			if needsJSONEscape(f) {
				if js, err := canonjson.Ordered(f); err == nil {
					add(string(js[1 : len(js)-1]))
				}
			}
		}
	}
	sort.SliceStable(ev.secrets, func(i, j int) bool {
		if len(ev.secrets[i]) != len(ev.secrets[j]) {
			return len(ev.secrets[i]) > len(ev.secrets[j])
		}
		return ev.secrets[i] < ev.secrets[j]
	})
	return ev.secrets
}

// needsJSONEscape reports whether canonjson.Ordered would encode s other than as s in
// quotes: it holds a quote, backslash, control character or invalid UTF-8.
func needsJSONEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			return true
		}
	}
	return !utf8.ValidString(s)
}

// redactString replaces every secret form in s. The last result is remembered, so the
// message shared by several message matchers is scanned once per Evaluate call.
func (ev *evidence) redactString(s string) string {
	if ev.redactedOK && len(s) == len(ev.redactedIn) && s == ev.redactedIn {
		return ev.redactedOut
	}
	in := s
	for _, sec := range ev.secretForms() {
		if containsLong(s, sec) {
			s = strings.ReplaceAll(s, sec, redaction)
		}
	}
	if len(in) >= 256 {
		ev.redactedIn, ev.redactedOut, ev.redactedOK = in, s, true
	}
	return s
}

// containsLong is strings.Contains for needles of any length at vectorised speed: the
// standard library's vectorised path covers needles up to 31 bytes (63 with AVX2), and
// generated secrets are often 64 characters, so longer needles are found by their first
// 16 bytes and then checked whole.
func containsLong(s, sub string) bool {
	if len(sub) <= 16 {
		return strings.Contains(s, sub)
	}
	head := sub[:16]
	for from := 0; ; {
		i := strings.Index(s[from:], head)
		if i < 0 {
			return false
		}
		if strings.HasPrefix(s[from+i:], sub) {
			return true
		}
		from += i + 1
	}
}

// redactValue returns v with every string (and map key) redacted; v is not modified.
// Values of other types pass through unchanged.
func (ev *evidence) redactValue(v any) any {
	if len(ev.obs.Secrets) == 0 || len(ev.secretForms()) == 0 {
		return v
	}
	switch t := v.(type) {
	case string:
		return ev.redactString(t)
	case []string:
		out := make([]string, len(t))
		for i, s := range t {
			out[i] = ev.redactString(s)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = ev.redactValue(x)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[ev.redactString(k)] = ev.redactValue(x)
		}
		return out
	case canonjson.Object:
		out := make(canonjson.Object, len(t))
		for i, m := range t {
			out[i] = canonjson.Member{Key: ev.redactString(m.Key), Value: ev.redactValue(m.Value)}
		}
		return out
	case []Artifact:
		out := make([]Artifact, len(t))
		for i, a := range t {
			a.Name, a.MimeType, a.SHA256 = ev.redactString(a.Name), ev.redactString(a.MimeType), ev.redactString(a.SHA256)
			out[i] = a
		}
		return out
	}
	return v
}

// failureDetail renders `expected <matcher JSON>; observed <observed JSON>`, then
// "; " and hint when there is one, within DetailLimit bytes, redacted. observed is
// already redacted.
func (ev *evidence) failureDetail(c *compiled, observed any, hint string) string {
	const pre, mid = "expected ", "; observed "
	exp := ev.redactString(c.specJSON)
	if hint != "" {
		hint = "; " + truncate(ev.redactString(hint), DetailLimit/4)
	}

	// observed strings are already at most DetailLimit bytes (see bound).
	js, err := canonjson.Ordered(observed)
	obs := string(js)
	if err != nil {
		obs = fmt.Sprintf("%q", "unencodable observation: "+err.Error())
	}
	obs = ev.redactString(obs)

	budget := DetailLimit - len(pre) - len(mid) - len(hint)
	if len(exp)+len(obs) > budget {
		expMax := budget - len(obs)
		if expMax < budget/4 {
			expMax = budget / 4
		}
		exp = truncate(exp, expMax)
		obs = truncate(obs, budget-len(exp))
	}
	return pre + exp + mid + obs + hint
}

// truncMark ends a value shortened to fit DetailLimit.
const truncMark = "…[truncated]"

// truncate shortens s to at most n bytes, at a rune boundary, ending with truncMark.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < len(truncMark) {
		return s[:runeCut(s, n)]
	}
	return s[:runeCut(s, n-len(truncMark))] + truncMark
}

// runeCut returns the largest i ≤ n such that s[:i] does not split a UTF-8 sequence.
func runeCut(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// evalArtifacts is artifact_exists (see Spec): an artifact with the name (and media
// type) passes when its downloaded bytes, if any, are its declared ones, and it meets
// sha256 and expected, which need downloaded bytes.
func (c *compiled) evalArtifacts(obs *Observation) result {
	if !obs.HasArtifacts {
		return result{missing: "artifacts were not collected"}
	}
	needBytes := c.spec.SHA256 != "" || c.hasText
	found := []Artifact{}
	passed, undownloaded := false, false
	var hints []string
	for _, a := range obs.Artifacts {
		var v struct {
			DownloadedSHA256 string
			DownloadedBytes  int64
		}
		if a.Downloaded {
			v.DownloadedSHA256, v.DownloadedBytes = sha256Hex(a.Content), int64(len(a.Content))
		}
		shown := a
		shown.Content = nil // outcomes never carry the bytes
		found = append(found, shown)
		if a.Name != c.spec.Name || (c.spec.MimeType != "" && a.MimeType != c.spec.MimeType) {
			continue
		}
		ok := true
		if a.Downloaded && (v.DownloadedSHA256 != a.SHA256 || v.DownloadedBytes != a.ByteSize) {
			ok = false
			hints = append(hints, fmt.Sprintf("artifact %s was registered with SHA-256 %s (%d bytes) but its download is %s (%d bytes)",
				a.Name, a.SHA256, a.ByteSize, v.DownloadedSHA256, v.DownloadedBytes))
		}
		if needBytes && !a.Downloaded {
			undownloaded = true
			continue
		}
		if c.spec.SHA256 != "" && v.DownloadedSHA256 != c.spec.SHA256 {
			ok = false
			hints = append(hints, fmt.Sprintf("artifact %s downloads as SHA-256 %s, not %s", a.Name, v.DownloadedSHA256, c.spec.SHA256))
		}
		if c.hasText {
			if got := c.form.applyBytes(a.Content); got != c.text {
				ok = false
				if c.binary {
					hints = append(hints, "artifact "+a.Name+"'s downloaded bytes: "+bytesHint([]byte(c.text), a.Content))
				} else if h := unicodeHint(c.text, got, 0, true); h != "" {
					hints = append(hints, h)
				} else {
					hints = append(hints, fmt.Sprintf("artifact %s's downloaded text is not the expected text", a.Name))
				}
			}
		}
		passed = passed || ok
	}
	if !passed && undownloaded && len(hints) == 0 {
		return result{missing: "the bytes of artifact " + c.spec.Name + " were not downloaded"}
	}
	return result{passed: passed, observed: found, hint: strings.Join(hints, "; ")}
}

// bytesHint says where got first differs from want (byte offsets; lengths).
func bytesHint(want, got []byte) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	return fmt.Sprintf("%d bytes, expected %d; they differ from byte offset %d", len(got), len(want), i)
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func joinHint(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
