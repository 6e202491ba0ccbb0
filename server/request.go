package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
)

// Request limits of every route, beyond api.MaxBodyBytes. Every request body is read
// whole, within its deadline, and checked once (checkJSONText) before a handler sees
// it.
const (
	// DefaultReadHeaderTimeout bounds reading a request's headers (Options.ReadHeaderTimeout).
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadBodyTimeout bounds reading a request's body, from the moment its
	// headers are read (Options.ReadBodyTimeout): a client that trickles its body is
	// answered 408 request_timeout and its connection closed.
	DefaultReadBodyTimeout = 30 * time.Second
)

// httpServer is the http.Server of h with the instance's header timeout, a 64 KiB
// header limit and idle connections closed after two minutes.
func (s *Server) httpServer(h http.Handler) *http.Server {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: s.headerTimeout, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	if s.errorLog != nil {
		hs.ErrorLog = log.New(s.errorLog, "http: ", log.LstdFlags)
	}
	return hs
}

// setBodyDeadline bounds the reading of a request's body (and of whatever of it a
// handler leaves unread, which the HTTP server drains after the handler) to timeout
// from now. Writers that cannot set deadlines (a test recorder) are left as they are.
func setBodyDeadline(w http.ResponseWriter, timeout time.Duration) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
}

// readRequestBody reads r's whole body, bounded by limit bytes (api.MaxBodyBytes, or
// api.MaxFileBytes for an upload; 413 request_too_large) and by the deadline
// setBodyDeadline set (408 request_timeout), then lifts the deadline, so that a handler
// that runs long is never cut off by it.
func readRequestBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, &controlplane.Error{Code: controlplane.CodeRequestTooLarge, Message: fmt.Sprintf("the request body exceeds %d bytes", limit)}
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, &controlplane.Error{Code: controlplane.CodeRequestTimeout, Message: "the request body was not received in time"}
	case err != nil:
		return nil, invalid("reading the request body: " + err.Error())
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	return b, nil
}

// checkJSONText checks every string (member names and values) of the JSON body b in
// one linear pass, without recursion: each must be valid UTF-8 (encoding/json would
// otherwise replace an invalid byte sequence or a lone UTF-16 surrogate escape by
// U+FFFD, silently changing what is stored) and must not contain U+0000 (which
// PostgreSQL cannot store in text); objects and arrays may nest at most
// api.MaxBodyDepth deep. A problem is an invalid_request *Error naming the field as a
// JSONPath ($.command.body, $.args[2]). A body that is not JSON passes: the handler's
// decoding reports it.
func checkJSONText(b []byte) error {
	type frame struct {
		object  bool
		keyNext bool   // object: the next string token is a member name
		key     string // object: the current member's name
		index   int    // array: the current element's index
	}
	var stack []frame
	path := func(member string, isKey bool) string {
		var sb strings.Builder
		sb.WriteString("$")
		for i, f := range stack {
			last := i == len(stack)-1
			switch {
			case f.object && last && isKey:
				writeMember(&sb, member)
			case f.object:
				writeMember(&sb, f.key)
			default:
				sb.WriteString("[" + strconv.Itoa(f.index) + "]")
			}
		}
		return sb.String()
	}
	done := func() { // a value of the innermost container is complete
		if n := len(stack); n > 0 {
			if stack[n-1].object {
				stack[n-1].keyNext = true
			} else {
				stack[n-1].index++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF, or not JSON: the handler's decoding reports it
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) >= api.MaxBodyDepth {
					return invalid(fmt.Sprintf("%s: the request body nests objects and arrays deeper than %d levels", path("", false), api.MaxBodyDepth))
				}
				stack = append(stack, frame{object: t == '{', keyNext: t == '{'})
			default:
				stack = stack[:len(stack)-1]
				done()
			}
		case string:
			isKey := len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].keyNext
			what := "the value"
			if isKey {
				what = "a member name"
			}
			switch {
			case strings.IndexByte(t, 0) >= 0:
				return invalid(fmt.Sprintf("%s: %s contains NUL (U+0000), which text fields may not hold", path(t, isKey), what))
			case replacedText(t, b[start:dec.InputOffset()]):
				return invalid(fmt.Sprintf("%s: %s is not valid UTF-8 (an invalid byte sequence or a lone UTF-16 surrogate escape)", path(t, isKey), what))
			}
			if isKey {
				stack[len(stack)-1].key, stack[len(stack)-1].keyNext = t, false
			} else {
				done()
			}
		default:
			done()
		}
	}
}

// writeMember appends a member name to a JSONPath: .name for identifier-like names,
// otherwise ['name'] with ' and \ escaped.
func writeMember(sb *strings.Builder, name string) {
	ident := name != ""
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			ident = false
			break
		}
	}
	if ident {
		sb.WriteString("." + name)
		return
	}
	sb.WriteString("['" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(name) + "']")
}

// replacedText reports whether decoding replaced part of a JSON string by U+FFFD: the
// decoded string s holds more U+FFFD than raw (the token's bytes) spells out, literally
// or as the escape \ufffd. encoding/json decodes invalid UTF-8 and lone surrogate
// escapes to U+FFFD, so that is exactly when the text was not valid Unicode.
func replacedText(s string, raw []byte) bool {
	n := strings.Count(s, string(utf8.RuneError))
	if n == 0 {
		return false
	}
	spelled := bytes.Count(raw, []byte(string(utf8.RuneError))) + bytes.Count(bytes.ToLower(raw), []byte(`\ufffd`))
	return n > spelled
}

// checkKeyLength bounds an idempotency or deduplication key (field names it in the
// message): at most api.MaxIdempotencyKeyBytes bytes, else invalid_request (400).
func checkKeyLength(field, key string) error {
	if len(key) > api.MaxIdempotencyKeyBytes {
		return invalid(fmt.Sprintf("%s is %d bytes long; at most %d bytes are allowed", field, len(key), api.MaxIdempotencyKeyBytes))
	}
	return nil
}

// checkIdempotencyKey checks the Idempotency-Key header of a request: absent is fine
// everywhere; present, it must be for a route that takes one (rt.idempotent), from the
// board, not empty, and at most api.MaxIdempotencyKeyBytes (400 otherwise).
func checkIdempotencyKey(r *http.Request, rt route, p principal) error {
	vs, present := r.Header[api.IdempotencyKeyHeader]
	if !present {
		return nil
	}
	bad := func(msg string) error {
		return &controlplane.Error{Code: controlplane.CodeIdempotencyKeyInvalid, Message: msg}
	}
	switch {
	case !rt.idempotent:
		return bad(rt.method + " " + rt.pattern + " takes no " + api.IdempotencyKeyHeader + " header")
	case !p.board:
		return bad("an agent token takes no " + api.IdempotencyKeyHeader + " header (commands carry their idempotencyKey in the body)")
	case len(vs) != 1 || strings.TrimSpace(vs[0]) == "":
		return bad("the " + api.IdempotencyKeyHeader + " header must be given once and not be empty")
	}
	return checkKeyLength(api.IdempotencyKeyHeader, vs[0])
}

// idempotencyKey returns the request's (checked) Idempotency-Key, "" when absent.
func idempotencyKey(r *http.Request) string { return r.Header.Get(api.IdempotencyKeyHeader) }

// keyedBody reads a raw JSON body (readBody) and checks its deduplication keys
// (events: eventId, sourceEventId; completions: callerDedupeKey, callerResultId) with
// checkKeyLength. A body that is not a JSON object, or whose members are not strings,
// is returned as it is, left to the state machine.
func keyedBody(r *http.Request, fields ...string) ([]byte, error) {
	b, err := readBody(r)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return b, nil
	}
	for _, f := range fields {
		var v string
		if raw, ok := m[f]; ok && json.Unmarshal(raw, &v) == nil {
			if err := checkKeyLength(f, v); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// stateTime parses a timestamp query parameter (field names it): RFC 3339 (for
// example 2026-08-09T00:00:05Z or 2026-08-09T02:00:05.250+02:00), returned in the
// state's own form, UTC ISO 8601 with milliseconds (2026-08-09T00:00:05.000Z), so
// that it compares with the state's timestamps as text. "" stays "". Error:
// invalid_request naming the field.
func stateTime(field, v string) (string, error) {
	if v == "" {
		return "", nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return "", invalid(fmt.Sprintf("%s %q is not an RFC 3339 timestamp (for example 2026-08-09T00:00:05.000Z)", field, clipText(v, 64)))
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z"), nil
}

// clipText shortens s to at most n bytes (on a rune boundary) for a message.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
