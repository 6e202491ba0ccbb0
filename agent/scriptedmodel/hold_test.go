package scriptedmodel

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// steerScript holds its first call mid-stream until released, then takes its answer
// from the steering message the agent delivers with the tool result.
const steerScript = `steps:
  - call: shell
    args: {command: "true"}
    hold_ms: 30000
  - answer_match: "STEERED_[A-Z0-9]+"
`

var (
	steerFirst = `{"stream":true,"messages":[{"role":"user","content":"go"}],"tools":` + opencodeChat + `}`
	// The agent delivered the steer after the tool result (Pi: a user message).
	steerSecond   = `{"stream":true,"messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"call_ap_1","type":"function","function":{"name":"bash","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_ap_1","content":"(no output)"},{"role":"user","content":"Change of plan: reply STEERED_7Q2 only."}],"tools":` + opencodeChat + `}`
	noSteerSecond = `{"stream":true,"messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"call_ap_1","type":"function","function":{"name":"bash","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_ap_1","content":"(no output)"}],"tools":` + opencodeChat + `}`
)

// TestParseHoldAndAnswerMatch: hold_ms and answer_match parse, and their misuse is
// reported with the other problems.
func TestParseHoldAndAnswerMatch(t *testing.T) {
	t.Parallel()
	s := mustScript(t, steerScript)
	if s.Steps[0].Hold != 30*time.Second || s.Steps[1].AnswerMatch == nil || s.Steps[1].AnswerMatch.String() != "STEERED_[A-Z0-9]+" {
		t.Fatalf("steps %+v", s.Steps)
	}
	if got := s.Steps[1].Describe(1); got != "step 2 (answer_match, line 5)" {
		t.Errorf("Describe = %q", got)
	}
	_, err := ParseScript("bad", []byte("steps:\n  - {answer: x, hold_ms: 5}\n  - {call: shell, args: {command: x}, hold_ms: 9999999}\n  - {answer_match: \"(\"}\n  - {answer_match: \"a*\"}\n  - {answer: x, answer_match: y}\n"), nil)
	for _, want := range []string{"step 1 (line 2): hold_ms applies to call steps only", "step 2 (line 3): hold_ms 9999999 must be in 1..600000",
		"step 3 (line 4): answer_match: error parsing regexp", "step 4 (line 5): answer_match matches the empty string", "step 5 (line 6): has more than one of call, answer and answer_match"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

// TestServerHoldsMidCallUntilReleased: the held call's stream sends its first frame and
// then only keep-alive comments until Release; the call then completes; the next request
// carrying the steering message gets the matched marker, one without it is refused
// naming the step.
func TestServerHoldsMidCallUntilReleased(t *testing.T) {
	t.Parallel()
	srv, r := serve(t, Options{Script: mustScript(t, steerScript), KeepAlive: 20 * time.Millisecond})
	req, _ := http.NewRequest(http.MethodPost, r.URL+"/chat/completions", strings.NewReader(steerFirst))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	first := <-lines
	if !strings.Contains(first, `"tool_calls"`) || !strings.Contains(first, `"bash"`) {
		t.Fatalf("first frame %q does not start the call", first)
	}
	// Held: only keep-alive comments (and blank lines) for a while, no [DONE].
	deadline := time.After(300 * time.Millisecond)
	keepalives := 0
held:
	for {
		select {
		case l := <-lines:
			switch {
			case l == ": keepalive":
				keepalives++
			case l == "":
			default:
				t.Fatalf("the held stream went on before the release: %q", l)
			}
		case <-deadline:
			break held
		}
	}
	if keepalives == 0 {
		t.Error("no keep-alive comments while held")
	}
	srv.Release()
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	if !strings.Contains(strings.Join(rest, "\n"), "data: [DONE]") {
		t.Fatalf("the stream did not complete after the release:\n%s", strings.Join(rest, "\n"))
	}
	resp2, body := post(t, r.URL+"/chat/completions", steerSecond)
	if _, text := decodeReply(t, FormatChat, resp2.Header.Get("Content-Type"), body); resp2.StatusCode != 200 || text != "STEERED_7Q2" {
		t.Fatalf("after the steer: %d text %q", resp2.StatusCode, text)
	}
	resp3, body := post(t, r.URL+"/chat/completions", noSteerSecond)
	if resp3.StatusCode != 400 || !strings.Contains(string(body), "step 2 (answer_match, line 5)") || !strings.Contains(string(body), "no steering message arrived") {
		t.Fatalf("without the steer: %d %s", resp3.StatusCode, body)
	}
	log := srv.Requests()
	if len(log) != 3 || log[0].Reply != "call bash (held mid-call until released)" {
		t.Errorf("log replies: %+v", log)
	}
	if srv.Released() != 1 {
		t.Errorf("Released = %d", srv.Released())
	}
}

// TestServerHoldReleaseEarlyAndExpiry: a release that comes before the hold is kept (the
// call is not held); without any release the hold ends after hold_ms and says so; the
// RunSet releases a run over HTTP.
func TestServerHoldReleaseEarlyAndExpiry(t *testing.T) {
	t.Parallel()
	srv, r := serve(t, Options{Script: mustScript(t, steerScript)})
	srv.Release()
	start := time.Now()
	if resp, _ := post(t, r.URL+"/chat/completions", steerFirst); resp.StatusCode != 200 || time.Since(start) > 5*time.Second {
		t.Fatalf("early release: %d after %v", resp.StatusCode, time.Since(start))
	}
	short := mustScript(t, strings.Replace(steerScript, "hold_ms: 30000", "hold_ms: 50", 1))
	srv2, r2 := serve(t, Options{Script: short})
	if resp, _ := post(t, r2.URL+"/chat/completions", steerFirst); resp.StatusCode != 200 {
		t.Fatalf("expired hold: %d", resp.StatusCode)
	}
	if got := srv2.Requests()[0].Reply; got != "call bash (held mid-call; not released within 50ms)" {
		t.Errorf("expired hold logged as %q", got)
	}

	rs, err := NewRunSet([]*Script{mustScript(t, steerScript)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	running, err := rs.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer running.Close(context.Background())
	// The agent reaches the model's HTTP API: it has no control route.
	for _, path := range []string{"/runs/1/control/release", "/control/release", "/runs/1/v1/control/release"} {
		if resp, _ := post(t, running.URL+path, ""); resp.StatusCode < 400 {
			t.Errorf("POST %s = %d: the agent can release the harness's hold", path, resp.StatusCode)
		}
	}
	if rs.Release(2) || !rs.Release(1) {
		t.Error("RunSet.Release: run 2 does not exist, run 1 does")
	}
	if n := rs.servers[0].Released(); n != 1 {
		t.Errorf("run 1 released %d times, want 1 (the harness's call only)", n)
	}
	resp, err := http.Post(running.URL+"/runs/1/v1/chat/completions", "application/json", strings.NewReader(steerFirst))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "[DONE]") {
		t.Errorf("the released run's call did not complete: %s", b)
	}
}
