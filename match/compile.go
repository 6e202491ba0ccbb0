package match

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"path"
	"regexp"
	"regexp/syntax"
	"strings"

	"github.com/agentproof/agentproof/canonjson"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/theory/jsonpath"
)

// Matcher kinds (docs/matchers.md). The message kinds compare the normalised message (see Normalize) with
// normalised expected text. message_regex uses Go's RE2 syntax instead of JavaScript
// RegExp: flags i, m and s mean what they mean in JavaScript;
// lookahead, lookbehind and backreferences are rejected by Compile; \d, \w, \s and \b
// are ASCII-only as in JavaScript without the u flag, except that \s omits the Unicode
// spaces JavaScript includes.
const (
	KindMessageExact       Kind = "message_exact"
	KindMessageContains    Kind = "message_contains"
	KindMessageOccurrences Kind = "message_occurrences"
	KindMessageRegex       Kind = "message_regex"
	KindMessageOrdered     Kind = "message_ordered"
	KindIssueStatus        Kind = "issue_status"
	KindRunStatus          Kind = "run_status"
	KindRuntimeMode        Kind = "runtime_mode"
	KindEnvironment        Kind = "environment"
	KindFileExists         Kind = "file_exists"
	// KindFileAbsent passes when the workspace snapshot has no file at path (the
	// oracle of a declined or stopped write).
	KindFileAbsent     Kind = "file_absent"
	KindFileExact      Kind = "file_exact"
	KindFileContains   Kind = "file_contains"
	KindArtifactExists Kind = "artifact_exists"
	KindJSONPath       Kind = "json_path"
	KindJSONSchema     Kind = "json_schema"
)

// kinds is every kind in documentation order.
var kinds = []Kind{
	KindMessageExact, KindMessageContains, KindMessageOccurrences, KindMessageRegex,
	KindMessageOrdered, KindIssueStatus, KindRunStatus, KindRuntimeMode, KindEnvironment,
	KindFileExists, KindFileExact, KindFileContains, KindArtifactExists, KindJSONPath,
	KindJSONSchema, KindRuntimeMetadata, KindFileAbsent, KindPlanRevisions, KindBlockerGuidance,
	KindProcessIdentity, KindNoMutation, KindPermissionOrder, KindTaskTitle, KindChatHandoff, KindCommand,
}

// kindSpec is what Compile and evaluation know of one kind: the Spec fields it accepts
// (besides kind, in the order Compile checks them), how Compile checks and prepares its
// parameters (nil: it has none to prepare), and how it grades the evidence.
type kindSpec struct {
	fields  []string
	compile func(Spec, *compiled, badFunc)
	eval    func(*compiled, *evidence) result
}

// kindSpecs has one row per kind (see kinds for their order).
var kindSpecs = map[Kind]kindSpec{
	KindMessageExact:       {[]string{"expected", "turn", "normalize"}, compileMessageText, evalMessageKind},
	KindMessageContains:    {[]string{"expected", "turn", "normalize"}, compileMessageText, evalMessageKind},
	KindMessageOccurrences: {[]string{"expected", "count", "turn", "normalize"}, compileOccurrences, evalMessageKind},
	KindMessageRegex:       {[]string{"pattern", "flags", "turn"}, compileRegex, evalMessageKind},
	KindMessageOrdered:     {[]string{"expected", "turn", "normalize"}, compileOrdered, evalMessageKind},
	KindIssueStatus:        {[]string{"expected"}, compileStatus, evalField(func(o *Observation) string { return o.IssueStatus }, "the issue status was not observed")},
	KindRunStatus:          {[]string{"expected"}, compileStatus, evalField(func(o *Observation) string { return o.RunStatus }, "the run status was not observed")},
	KindRuntimeMode:        {[]string{"expected"}, compileStatus, evalField(func(o *Observation) string { return o.RuntimeMode }, "the runtime mode was not observed")},
	KindEnvironment:        {[]string{"expected"}, compileStatus, evalField(func(o *Observation) string { return o.Environment }, "the environment was not observed")},
	KindFileExists:         {[]string{"path", "sha256", "source"}, compileFile, (*compiled).evalFile},
	KindFileAbsent:         {[]string{"path", "source"}, compileFile, (*compiled).evalFile},
	KindFileExact:          {[]string{"path", "expected", "normalize", "sha256", "source", "encoding"}, compileFile, (*compiled).evalFile},
	KindFileContains:       {[]string{"path", "expected", "normalize", "sha256", "source"}, compileFile, (*compiled).evalFile},
	KindArtifactExists:     {[]string{"name", "mimeType", "sha256", "expected", "normalize", "encoding"}, compileArtifact, onObservation((*compiled).evalArtifacts)},
	KindJSONPath:           {[]string{"path", "expected"}, compileJSONPath, (*compiled).evalJSONPath},
	KindJSONSchema:         {[]string{"schema"}, compileSchema, (*compiled).evalJSONSchema},
	KindRuntimeMetadata:    {[]string{"expected"}, compileRuntime, onObservation((*compiled).evalRuntime)},
	KindPlanRevisions:      {[]string{"name", "expected"}, compilePlan, onObservation((*compiled).evalPlan)},
	KindBlockerGuidance:    {[]string{}, nil, func(_ *compiled, ev *evidence) result { return evalBlocker(ev.obs) }},
	KindProcessIdentity:    {[]string{"samePidAcrossTurns"}, compileProcess, onObservation((*compiled).evalProcess)},
	KindNoMutation:         {[]string{"path"}, compileWatchedPath, onObservation((*compiled).evalNoMutation)},
	KindPermissionOrder:    {[]string{"path"}, compileWatchedPath, onObservation((*compiled).evalPermissionOrder)},
	KindTaskTitle:          {[]string{"expected", "count"}, compileTitle, onObservation((*compiled).evalTitle)},
	KindChatHandoff:        {[]string{"name", "expected", "count"}, compileChat, onObservation((*compiled).evalChat)},
	KindCommand:            {[]string{"name", "exitCode", "expected", "pattern", "flags", "tests"}, compileCommand, onObservation((*compiled).evalCommand)},
}

// Kinds returns every matcher kind Compile accepts, in documentation order (a fresh
// slice).
func Kinds() []Kind { return append([]Kind(nil), kinds...) }

// Valid reports whether k is a kind Compile accepts.
func (k Kind) Valid() bool {
	_, ok := kindSpecs[k]
	return ok
}

// kindList is every kind joined with ", ", for error messages.
func kindList() string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// Matcher is a compiled, validated matcher. It is immutable: one Matcher may be evaluated
// by any number of goroutines at once. The zero Matcher is not compiled and evaluates as
// failed with a detail saying so.
type Matcher struct{ c *compiled }

// compiled holds everything a kind needs at evaluation, prepared once by Compile.
type compiled struct {
	spec     Spec
	specJSON string // JSON.stringify-compatible encoding of spec, for details

	text    string   // message kinds: normalised expected; file kinds: expected in form; status kinds: raw expected
	items   []string // message_ordered: normalised items
	count   int      // message_occurrences
	re      *regexp.Regexp
	file    string // file kinds: cleaned workspace-relative path
	jpath   *jsonpath.Path
	want    any    // json_path: expected value as given
	wantJS  []byte // json_path: RFC 8785 encoding of want
	schema  *jsonschema.Schema
	runtime canonjson.Object // runtime_metadata: expected key → value, sorted by key
	plan    []planRevision   // plan_revisions: the expected revisions, oldest first (text: the document key)
	turn    int
	samePID bool        // process_identity
	form    unicodeForm // text kinds: the Unicode normalisation of both sides
	display any         // Outcome.Expected
	hasText bool        // artifact_exists: expected was given
	binary  bool        // file_exact, artifact_exists: expected is exact bytes (encoding hex)
}

// Kind returns the matcher's kind ("" for the zero Matcher).
func (m Matcher) Kind() Kind {
	if m.c == nil {
		return ""
	}
	return m.c.spec.Kind
}

// Spec returns the declaration the matcher was compiled from.
func (m Matcher) Spec() Spec {
	if m.c == nil {
		return Spec{}
	}
	return m.c.spec
}

// Compile validates spec and prepares it for evaluation. It returns a *SpecError (the
// first problem found, fields checked in the order of the kind's table in Spec's doc) for:
// a missing or unknown kind; a field the kind does not use; a missing or mistyped
// parameter; a negative count or turn; flags outside "ims"; a pattern RE2 cannot compile
// (naming lookahead, lookbehind or backreference when the pattern uses one); a runtime
// mode other than legacy/native; a normalize other than none/nfc/nfkc; a workspace path
// that is empty, absolute or contains "..", a malformed mimeType; a JSONPath that does
// not parse (RFC 9535, or the legacy dot form converted first); an expected value that
// cannot be encoded as JSON; and a JSON Schema that does not compile (draft 2020-12,
// references outside the schema refused and named as written, a "format" outside
// SchemaFormats refused; SpecError.Pointer says where in the schema).
// Use CompileAll to get every problem of every spec.
func Compile(spec Spec) (Matcher, error) {
	m, problems := compile(spec)
	if len(problems) > 0 {
		return Matcher{}, problems[0]
	}
	return m, nil
}

// CompileAll compiles every spec. On success it returns one Matcher per spec, in order.
// Otherwise it returns nil and a SpecErrors listing every problem of every spec, each
// with Index set to the spec's position, so a catalog can report them all at once with
// their file positions.
func CompileAll(specs []Spec) ([]Matcher, error) {
	out := make([]Matcher, len(specs))
	var all SpecErrors
	for i, s := range specs {
		m, problems := compile(s)
		for _, p := range problems {
			p.Index = i
		}
		all = append(all, problems...)
		out[i] = m
	}
	if len(all) > 0 {
		return nil, all
	}
	return out, nil
}

// compile returns the compiled matcher, or every problem found.
func compile(spec Spec) (Matcher, []*SpecError) {
	var problems []*SpecError
	bad := func(field, format string, args ...any) *SpecError {
		e := &SpecError{Kind: spec.Kind, Field: field, Message: fmt.Sprintf(format, args...)}
		problems = append(problems, e)
		return e
	}
	ks, ok := kindSpecs[spec.Kind]
	if !ok {
		if spec.Kind == "" {
			bad("kind", "kind is required; use one of %s", kindList())
		} else {
			bad("kind", "unknown kind %q; use one of %s", spec.Kind, kindList())
		}
		return Matcher{}, problems
	}
	for _, f := range presentFields(spec) {
		if !contains(ks.fields, f) {
			bad(f, "field %s is not used by kind %s; remove it (this kind takes: %s)", f, spec.Kind, strings.Join(ks.fields, ", "))
		}
	}
	c := &compiled{spec: spec, turn: spec.Turn}
	if f, ok := parseForm(spec.Normalize); ok {
		c.form = f
	} else {
		bad("normalize", "normalize must be one of %s (the Unicode normalisation both sides are compared in; absent means nfc); got %q", strings.Join(normalizeForms, ", "), spec.Normalize)
	}
	if spec.Turn < 0 {
		bad("turn", "turn must be 1 or more (the 1-based turn whose message to check), or absent for the whole message; got %d", spec.Turn)
	}
	if ks.compile != nil {
		ks.compile(spec, c, bad) // checks the kind's parameters and prepares c
	}
	js, err := canonjson.Ordered(spec)
	if err != nil && len(problems) == 0 {
		e := bad("expected", "the matcher cannot be encoded as JSON; use only strings, numbers, booleans, null, lists and maps")
		e.Err = err
	}
	if len(problems) > 0 {
		return Matcher{}, problems
	}
	c.specJSON = string(js)
	return Matcher{c: c}, nil
}

// compileMessageText prepares message_exact and message_contains: the normalised
// text to look for.
func compileMessageText(spec Spec, c *compiled, bad badFunc) {
	if s, ok := stringParam(spec, bad, "the text to look for in the message"); ok {
		c.text = Normalize(c.form.apply(s))
		c.display = c.text
	}
}

// compileWatchedPath prepares no_mutation and permission_order: the workspace path
// whose watched events they read.
func compileWatchedPath(spec Spec, c *compiled, bad badFunc) {
	c.file = checkWorkspacePath(spec.Path, bad)
	c.display = c.file
}

// compileOccurrences prepares message_occurrences: the normalised text and a count of
// 0 or more.
func compileOccurrences(spec Spec, c *compiled, bad badFunc) {
	if s, ok := stringParam(spec, bad, "the text whose occurrences to count"); ok {
		c.text = Normalize(c.form.apply(s))
	}
	switch {
	case spec.Count == nil:
		bad("count", "count is required: the exact number of non-overlapping occurrences (0 or more)")
	case *spec.Count < 0:
		bad("count", "count must be 0 or more; got %d", *spec.Count)
	default:
		c.count = *spec.Count
		c.display = c.count
	}
}

// compileStatus prepares the kinds that compare one exact value (issue_status,
// run_status, environment: not empty; runtime_mode: legacy or native).
func compileStatus(spec Spec, c *compiled, bad badFunc) {
	if spec.Kind == KindRuntimeMode {
		if s, ok := stringParam(spec, bad, `"legacy" or "native"`); ok {
			if s != "legacy" && s != "native" {
				bad("expected", `expected must be "legacy" or "native"; got %q`, s)
			}
			c.text, c.display = s, s
		}
		return
	}
	if s, ok := stringParam(spec, bad, "the exact value to compare with"); ok {
		if s == "" {
			bad("expected", "expected must not be empty; give the exact value to compare with")
		}
		c.text, c.display = s, s
	}
}

// compileFile prepares the file kinds: a workspace-relative path, a source, an
// optional sha256 and, for file_exact and file_contains, the expected content.
func compileFile(spec Spec, c *compiled, bad badFunc) {
	c.file = checkWorkspacePath(spec.Path, bad)
	c.display = c.file
	switch spec.Source {
	case "", SourceWorkspace, SourceAgentHome:
	default:
		bad("source", "source must be %s (the default) or %s; got %q", SourceWorkspace, SourceAgentHome, spec.Source)
	}
	checkSHA256(spec, bad)
	if spec.Kind == KindFileExists || spec.Kind == KindFileAbsent {
		return
	}
	if s, ok := stringParam(spec, bad, "the file content to compare with (whitespace as it is; Unicode normalised as normalize says)"); ok {
		c.text = c.form.apply(s)
		c.display = c.text
		if b, isHex := compileEncoding(spec, s, c, bad); isHex {
			c.text, c.display = string(b), s
		}
	}
}

// compileArtifact prepares artifact_exists: a name, an optional media type, sha256 and
// expected text; its display is the object of the given ones.
func compileArtifact(spec Spec, c *compiled, bad badFunc) {
	if spec.Name == "" {
		bad("name", "name is required: the artifact name to look for")
	}
	if spec.MimeType != "" {
		if _, _, err := mime.ParseMediaType(spec.MimeType); err != nil {
			e := bad("mimeType", "mimeType %q is not a media type such as text/plain; fix or remove it", spec.MimeType)
			e.Err = err
		}
	}
	checkSHA256(spec, bad)
	want := canonjson.Object{{Key: "name", Value: spec.Name}}
	if spec.MimeType != "" {
		want = append(want, canonjson.Member{Key: "mimeType", Value: spec.MimeType})
	}
	if spec.SHA256 != "" {
		want = append(want, canonjson.Member{Key: "sha256", Value: spec.SHA256})
	}
	if spec.Expected != nil {
		if s, ok := stringParam(spec, bad, "the artifact's downloaded text to compare with (whitespace as it is)"); ok {
			c.text = c.form.apply(s)
			c.hasText = true
			if b, isHex := compileEncoding(spec, s, c, bad); isHex {
				c.text = string(b)
				want = append(want, canonjson.Member{Key: "expected", Value: s}, canonjson.Member{Key: "encoding", Value: EncodingHex})
			} else {
				want = append(want, canonjson.Member{Key: "expected", Value: c.text})
			}
		}
	}
	c.display = want
}

// compileEncoding checks spec.Encoding for a kind that takes it: with EncodingHex it
// decodes expected (s) into the exact bytes, makes the comparison byte for byte
// (normalize must be absent or none) and reports true; with EncodingText or none it
// reports false.
func compileEncoding(spec Spec, s string, c *compiled, bad badFunc) ([]byte, bool) {
	switch spec.Encoding {
	case "", EncodingText:
		return nil, false
	case EncodingHex:
	default:
		bad("encoding", "encoding must be %s (the default) or %s; got %q", EncodingText, EncodingHex, spec.Encoding)
		return nil, false
	}
	if spec.Normalize != "" && spec.Normalize != NormalizeNone {
		bad("normalize", "normalize %q does not apply to bytes (encoding hex); remove it", spec.Normalize)
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		e := bad("expected", "expected must be the hexadecimal form of the bytes (encoding hex): %v", err)
		e.Err = err
		return nil, false
	}
	c.form, c.binary = formNone, true
	return b, true
}

// checkSHA256 checks an optional sha256 field: 64 lower-case hex digits.
func checkSHA256(spec Spec, bad badFunc) {
	if spec.SHA256 == "" {
		return
	}
	ok := len(spec.SHA256) == 64
	for _, r := range spec.SHA256 {
		ok = ok && (r >= '0' && r <= '9' || r >= 'a' && r <= 'f')
	}
	if !ok {
		bad("sha256", "sha256 must be 64 lower-case hex digits (the SHA-256 of the expected bytes); got %q", spec.SHA256)
	}
}

// presentFields lists the non-kind fields set in spec, in declaration order.
func presentFields(s Spec) []string {
	var out []string
	add := func(set bool, name string) {
		if set {
			out = append(out, name)
		}
	}
	add(s.Expected != nil, "expected")
	add(s.Count != nil, "count")
	add(s.Pattern != "", "pattern")
	add(s.Flags != "", "flags")
	add(s.Path != "", "path")
	add(s.Name != "", "name")
	add(s.MimeType != "", "mimeType")
	add(s.Schema != nil, "schema")
	add(s.Turn != 0, "turn")
	add(s.Normalize != "", "normalize")
	add(s.SHA256 != "", "sha256")
	add(s.Source != "", "source")
	add(s.Encoding != "", "encoding")
	add(s.SamePIDAcrossTurns != nil, "samePidAcrossTurns")
	add(s.ExitCode != nil, "exitCode")
	add(s.Tests != nil, "tests")
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

type badFunc func(field, format string, args ...any) *SpecError

// stringParam returns spec.Expected as a string, reporting it missing or mistyped.
func stringParam(spec Spec, bad badFunc, what string) (string, bool) {
	switch v := spec.Expected.(type) {
	case nil:
		bad("expected", "expected is required: %s", what)
	case string:
		return v, true
	default:
		bad("expected", "expected must be a string (%s), not %s; quote it in YAML", what, jsonType(v))
	}
	return "", false
}

// jsonType names the JSON type of a decoded YAML/JSON value, for error messages.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any, []string:
		return "a list"
	case map[string]any:
		return "a map"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64, json.Number:
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}

func compileRegex(spec Spec, c *compiled, bad badFunc) {
	flags := ""
	for _, f := range spec.Flags {
		switch {
		case f != 'i' && f != 'm' && f != 's':
			bad("flags", "flag %q is not supported; flags may only combine i (ignore case), m (multi-line ^ and $) and s (dot matches newline)", f)
			return
		case strings.ContainsRune(flags, f):
			bad("flags", "flag %q is repeated; give each flag once", f)
			return
		}
		flags += string(f)
	}
	if spec.Pattern == "" {
		bad("pattern", "pattern is required: an RE2 regular expression tested (unanchored) against the normalised message")
		return
	}
	src := spec.Pattern
	if flags != "" {
		src = "(?" + flags + ")" + src
	}
	re, err := regexp.Compile(src)
	if err != nil {
		if construct := unsupportedConstruct(spec.Pattern); construct != "" {
			e := bad("pattern", "pattern uses a %s, which RE2 (Go regexp) does not support; rewrite it without the %s (for example match the text directly, or split it into several matchers)", construct, construct)
			e.Construct, e.Err = construct, err
			return
		}
		e := bad("pattern", "pattern is not a valid RE2 regular expression: %s", describeRegexError(err))
		e.Err = err
		return
	}
	c.re = re
	c.display = "/" + spec.Pattern + "/" + flags
}

// describeRegexError renders a regexp/syntax error without the "error parsing regexp"
// prefix.
func describeRegexError(err error) string {
	if se, ok := err.(*syntax.Error); ok {
		return fmt.Sprintf("%s: `%s`", se.Code, se.Expr)
	}
	return err.Error()
}

// unsupportedConstruct names the first JavaScript-only construct in pattern outside a
// character class: "lookahead" for (?= (?!, "lookbehind" for (?<= (?<!, "backreference"
// for \1…\9 or \k<name>. It returns "" when the pattern has none.
func unsupportedConstruct(p string) string {
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '\\' {
			if i+1 < len(p) {
				n := p[i+1]
				if !inClass && ((n >= '1' && n <= '9') || (n == 'k' && i+2 < len(p) && p[i+2] == '<')) {
					return "backreference"
				}
				i++
			}
			continue
		}
		if inClass {
			if c == ']' {
				inClass = false
			}
			continue
		}
		switch {
		case c == '[':
			inClass = true
			if i+1 < len(p) && p[i+1] == '^' {
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				i++
			}
		case strings.HasPrefix(p[i:], "(?=") || strings.HasPrefix(p[i:], "(?!"):
			return "lookahead"
		case strings.HasPrefix(p[i:], "(?<=") || strings.HasPrefix(p[i:], "(?<!"):
			return "lookbehind"
		}
	}
	return ""
}

func compileOrdered(spec Spec, c *compiled, bad badFunc) {
	var raw []string
	switch v := spec.Expected.(type) {
	case nil:
		bad("expected", "expected is required: a list of texts that must appear in this order")
		return
	case []string:
		raw = v
	case []any:
		for i, x := range v {
			s, ok := x.(string)
			if !ok {
				bad("expected", "expected[%d] must be a string, not %s; quote it in YAML", i, jsonType(x))
				return
			}
			raw = append(raw, s)
		}
	default:
		bad("expected", "expected must be a list of strings, not %s", jsonType(v))
		return
	}
	if len(raw) == 0 {
		bad("expected", "expected must list at least one text")
		return
	}
	c.items = make([]string, len(raw))
	for i, s := range raw {
		c.items[i] = Normalize(c.form.apply(s))
	}
	c.display = c.items
}

// checkWorkspacePath validates a workspace-relative path and returns its cleaned form.
func checkWorkspacePath(p string, bad badFunc) string {
	switch {
	case p == "":
		bad("path", "path is required: the file's path relative to the workspace root, such as notes/out.txt")
		return ""
	case strings.ContainsRune(p, 0):
		bad("path", "path must not contain a NUL byte")
		return ""
	case strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || (len(p) >= 2 && p[1] == ':'):
		bad("path", "path %q is absolute; give it relative to the workspace root", p)
		return ""
	}
	for _, seg := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." {
			bad("path", "path %q contains \"..\" and could leave the workspace; give it relative to the workspace root without \"..\"", p)
			return ""
		}
	}
	clean := path.Clean(p)
	if clean == "." {
		bad("path", "path %q names the workspace root, not a file", p)
		return ""
	}
	return clean
}

func compileJSONPath(spec Spec, c *compiled, bad badFunc) {
	if spec.Path == "" {
		bad("path", "path is required: an RFC 9535 JSONPath such as $.issue.status, or the legacy dot form issue.status")
	} else {
		q := LegacyPathToJSONPath(spec.Path)
		p, err := jsonpath.Parse(q)
		if err != nil {
			e := bad("path", "path %q is not a valid JSONPath (RFC 9535, starting with $) nor a legacy dot path: %v", spec.Path, err)
			e.Err = err
		} else {
			c.jpath = p
		}
	}
	if spec.Expected == nil {
		bad("expected", "expected is required: the JSON value the selected node must equal")
		return
	}
	js, err := canonjson.Sorted(spec.Expected)
	if err != nil {
		e := bad("expected", "expected cannot be encoded as JSON; use only strings, numbers, booleans, lists and maps with string keys")
		e.Err = err
		return
	}
	c.want, c.wantJS, c.display = spec.Expected, js, spec.Expected
}

// LegacyPathToJSONPath converts the legacy dot form (segments separated by ".",
// empty segments ignored, a numeric segment indexes an array or names an object member)
// to an RFC 9535 query. A path starting with "$" is returned unchanged. A numeric
// segment n becomes the union ['n',n], which selects member "n" of an object or element
// n of an array, exactly as the legacy walk did; other segments become name selectors.
// An all-empty path ("", ".") selects the root, "$".
func LegacyPathToJSONPath(p string) string {
	if strings.HasPrefix(p, "$") {
		return p
	}
	var b strings.Builder
	b.WriteByte('$')
	for _, seg := range strings.Split(p, ".") {
		if seg == "" {
			continue
		}
		quoted := quoteName(seg)
		if isIndex(seg) {
			fmt.Fprintf(&b, "[%s,%s]", quoted, seg)
		} else {
			fmt.Fprintf(&b, "[%s]", quoted)
		}
	}
	return b.String()
}

// isIndex reports whether seg is a JSONPath array index: 0 or digits without a leading
// zero, small enough for an I-JSON integer.
func isIndex(seg string) bool {
	if seg == "" || len(seg) > 15 || (len(seg) > 1 && seg[0] == '0') {
		return false
	}
	for i := 0; i < len(seg); i++ {
		if seg[i] < '0' || seg[i] > '9' {
			return false
		}
	}
	return true
}

// quoteName renders s as an RFC 9535 single-quoted name selector.
func quoteName(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch {
		case r == '\'':
			b.WriteString(`\'`)
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// schemaURL is the location under which a matcher's schema is registered; it is never
// fetched (see recordingLoader).
const schemaURL = "https://agentproof.invalid/matcher.schema.json"
