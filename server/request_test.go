package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/server"
)

// rawRequest opens a TCP connection to the instance and writes head (request line and
// headers, without the blank line that ends them).
func rawConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestSlowClientsAreCutOff: a client that trickles its body (one byte every 50 ms of a
// 1000-byte body) gets 408 request_timeout once the body timeout passes and its
// connection is closed; one that trickles its headers is disconnected after the header
// timeout. A client that sends promptly is served on the same server.
func TestSlowClientsAreCutOff(t *testing.T) {
	t.Parallel()
	in := startInstance(t, server.Options{ReadHeaderTimeout: 300 * time.Millisecond, ReadBodyTimeout: 300 * time.Millisecond})
	addr, tok := in.run.Addr, in.run.BoardToken()

	t.Run("body", func(t *testing.T) {
		t.Parallel()
		conn := rawConn(t, addr)
		fmt.Fprintf(conn, "POST /api/companies HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", tok)
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
					if _, err := conn.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
		conn.SetReadDeadline(time.Now().Add(20 * time.Second)) // the test's own bound
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no response to a trickled body: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		var e api.Error
		if resp.StatusCode != http.StatusRequestTimeout || json.Unmarshal(b, &e) != nil || e.Code != api.CodeRequestTimeout {
			t.Fatalf("trickled body: %d %s, want 408 request_timeout", resp.StatusCode, b)
		}
		if !resp.Close && resp.Header.Get("Connection") != "close" {
			t.Errorf("the connection of a timed-out body is kept open (headers %v)", resp.Header)
		}
	})

	t.Run("headers", func(t *testing.T) {
		t.Parallel()
		conn := rawConn(t, addr)
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		go func() {
			for _, c := range "GET /api/companies HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tok {
				if _, err := conn.Write([]byte(string(c))); err != nil {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
		_, err := io.ReadAll(conn)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("a client trickling its headers was not disconnected")
		}
	})

	t.Run("prompt", func(t *testing.T) {
		t.Parallel()
		if _, err := in.board().CreateCompany(context.Background(), "Prompt", "PRO"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestRunTokenExpiresWithItsRun: once a run ends, its agent token gets 401 on every
// agent read and write (context, documents, events, replay, commands, checkpoint), while
// the board still reads the run; only an identical retry of the completion is still
// accepted with it (a lost acknowledgement is retried), a different one is 401.
func TestRunTokenExpiresWithItsRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newBoardWorld(t)
	co := "/api/companies/" + w.co.ID()
	if status, code, b := call(t, w.base, "GET", co+"/runs/run-1/context", w.runTok, nil); status != 200 {
		t.Fatalf("context while the run runs: %d %s %s", status, code, b)
	}
	agent := client.New(w.base, w.runTok, nil).Company(w.co.ID())
	ev, _ := json.Marshal(controlplane.NativeEvent{EventID: "run-1:completed", RunID: "run-1", Sequence: 1, Type: "run.completed"})
	if _, err := agent.AppendEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	completion, _ := json.Marshal(controlplane.NativeRunResult{RunID: "run-1", Status: "succeeded", Summary: "done"})
	if err := agent.CompleteRun(ctx, completion); err != nil {
		t.Fatal(err)
	}

	cmd := `{"runId":"run-1","idempotencyKey":"late","command":{"kind":"report_progress","body":"after the end"}}`
	late, _ := json.Marshal(controlplane.NativeEvent{EventID: "run-1:late", RunID: "run-1", Sequence: 2, Type: "run.progress"})
	other, _ := json.Marshal(controlplane.NativeRunResult{RunID: "run-1", Status: "failed", Summary: "changed my mind"})
	for _, c := range []struct{ method, path, body string }{
		{"GET", co + "/runs/run-1/context", ""},
		{"GET", co + "/runs/run-1/documents", ""},
		{"GET", co + "/runs/run-1/events?sourceInstanceId=capability-mock", ""},
		{"POST", co + "/events", string(late)},
		{"POST", co + "/commands", cmd},
		{"POST", co + "/commands/try", cmd},
		{"GET", co + "/session/checkpoint", ""},
		{"PUT", co + "/session/checkpoint", `{"cursor":1}`},
		{"POST", co + "/complete", string(other)},
	} {
		status, code, b := call(t, w.base, c.method, c.path, w.runTok, []byte(c.body))
		if status != http.StatusUnauthorized || code != "unauthorized" || !strings.Contains(string(b), "run run-1 ended (succeeded)") {
			t.Errorf("%s %s after the run ended: %d %s", c.method, c.path, status, b)
		}
	}
	// the identical retry of the completion is a duplicate, still accepted
	if status, _, b := call(t, w.base, "POST", co+"/complete", w.runTok, completion); status != http.StatusNoContent {
		t.Errorf("identical completion retry: %d %s, want 204", status, b)
	}
	// the board reads the ended run
	if status, _, b := call(t, w.base, "GET", co+"/runs/run-1/context", w.boardTk, nil); status != 200 {
		t.Errorf("board read of the ended run: %d %s", status, b)
	}
	st, err := w.co.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(st.Runs[0].Events); st.Runs[0].Status != "succeeded" || n != 1 {
		t.Errorf("run after the refused writes: %s with %d events, want succeeded with 1", st.Runs[0].Status, n)
	}
	// A later run of the same agent is the company's active run now: the ended token
	// cannot complete it (a completion without runId acts on the active run).
	srv := w.in.run.Server
	issue2, err := w.co.CreateIssue(ctx, api.CreateIssueRequest{Title: "Next", AssigneeActorID: &w.agent})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.OpenRun(ctx, w.co.ID(), controlplane.OpenInput{Identity: controlplane.Identity{RunID: "run-2", SessionID: "s-2",
		CompanyID: w.co.ID(), IssueID: issue2.ID, AgentID: w.agent}, BackendKind: "codex"}); err != nil {
		t.Fatal(err)
	}
	// run-2 is ready to be completed (its run.terminal event is in), so a completion
	// without runId would take effect on it.
	run2 := srv.MintAgentToken(w.co.ID(), w.agent, "run-2")
	terminal := `{"turnTerminalState":"completed","runTerminalState":"succeeded","reportedWorkDisposition":"needs_review"}`
	prpEvent := `{"schema":"paperclip.prp.event.v1","sourceEventId":"s:run-2:1","sourceSeq":1,"sourceInstanceId":"s","sourceKind":"runner","runId":"run-2",` +
		`"eventType":"run.terminal","schemaVersion":1,"priority":0,"emittedAt":"2026-08-09T00:00:00.000Z","payload":` + terminal + `}`
	if status, _, b := call(t, w.base, "POST", co+"/events", run2, []byte(prpEvent)); status != 200 {
		t.Fatalf("run-2's terminal event: %d %s", status, b)
	}
	prp := `{"result":{"reportedWorkDisposition":"needs_review","summary":"s","completionClaim":{"contractRevision":1,"objectiveSatisfied":false,"criteria":[],"remainingWork":[]},` +
		`"evidence":[],"verification":[],"attentionRequests":[],"artifacts":[]},"terminal":` + terminal + `}`
	if status, code, b := call(t, w.base, "POST", co+"/complete", w.runTok, []byte(prp)); status != http.StatusUnauthorized || code != "unauthorized" {
		t.Errorf("the ended token completing the active run-2: %d %s, want 401", status, b)
	}
	if status, _, b := call(t, w.base, "GET", co+"/runs/run-2/context", run2, nil); status != 200 {
		t.Errorf("run-2's own token: %d %s", status, b)
	}
	st, err = w.co.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(st.Runs[0].Events); st.Runs[0].Status != "succeeded" || n != 1 || st.Runs[1].Status != "running" {
		t.Errorf("runs after the refused writes: run-1 %s with %d events, run-2 %s; want succeeded with 1, running", st.Runs[0].Status, n, st.Runs[1].Status)
	}
}

// TestIdempotencyKeyLength: idempotency and deduplication keys are at most 256 bytes;
// a longer one is 400 invalid_request naming the field and its length, and nothing is
// applied.
func TestIdempotencyKeyLength(t *testing.T) {
	t.Parallel()
	w := newBoardWorld(t)
	co := "/api/companies/" + w.co.ID()
	ok := strings.Repeat("k", api.MaxIdempotencyKeyBytes)
	long := strings.Repeat("é", api.MaxIdempotencyKeyBytes/2) + "x" // 257 bytes
	cmd := func(key string) []byte {
		return []byte(`{"runId":"run-1","idempotencyKey":"` + key + `","command":{"kind":"report_progress","body":"hi"}}`)
	}
	if status, _, b := call(t, w.base, "POST", co+"/commands", w.runTok, cmd(ok)); status != 200 {
		t.Fatalf("a 256-byte key: %d %s", status, b)
	}
	for _, c := range []struct {
		name, path, field string
		body              []byte
	}{
		{"command", co + "/commands", "idempotencyKey", cmd(long)},
		{"tried command", co + "/commands/try", "idempotencyKey", cmd(long)},
		{"event", co + "/events", "eventId", []byte(`{"eventId":"` + long + `","runId":"run-1","sequence":1,"type":"run.started"}`)},
		{"completion", co + "/complete", "callerDedupeKey", []byte(`{"result":{},"terminal":{},"callerDedupeKey":"` + long + `"}`)},
	} {
		status, code, b := call(t, w.base, "POST", c.path, w.runTok, c.body)
		if want := c.field + " is 257 bytes long; at most 256 bytes are allowed"; status != 400 || code != "invalid_request" || !strings.Contains(string(b), want) {
			t.Errorf("%s with a 257-byte key: %d %s, want 400 invalid_request %q", c.name, status, b, want)
		}
	}
	st, err := w.co.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(st.Runs[0].Events); n != 0 {
		t.Errorf("%d events appended by refused requests", n)
	}
}

// TestTimestampsValidated: dueBy must be RFC 3339 (400 naming it otherwise) and is
// compared as an instant, whatever its offset or precision; an event's emittedAt must be
// a date-time.
func TestTimestampsValidated(t *testing.T) {
	t.Parallel()
	w := newBoardWorld(t)
	co := "/api/companies/" + w.co.ID()
	wakes, err := w.co.Wakes(context.Background(), "")
	if err != nil || len(wakes) != 1 {
		t.Fatalf("wakes %v, %v", wakes, err)
	}
	due, err := time.Parse(time.RFC3339, wakes[0].DueAt)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"yesterday", "2026-08-09", "2026-08-09T00:00:05", "2026-13-40T00:00:00Z", "9999999999"} {
		status, code, b := call(t, w.base, "GET", co+"/wakes?dueBy="+bad, w.boardTk, nil)
		if status != 400 || code != "invalid_request" || !strings.Contains(string(b), "dueBy") || !strings.Contains(string(b), "RFC 3339") {
			t.Errorf("dueBy=%s: %d %s, want 400 naming dueBy", bad, status, b)
		}
	}
	for _, c := range []struct {
		dueBy string
		n     int
	}{
		{due.Format(time.RFC3339), 1},
		{due.In(time.FixedZone("", 2*3600)).Format(time.RFC3339), 1},                             // the same instant at +02:00
		{due.Add(-time.Millisecond).In(time.FixedZone("", -5*3600)).Format(time.RFC3339Nano), 0}, // just before, at -05:00
		{due.Add(-time.Second).Format(time.RFC3339), 0},
	} {
		status, _, b := call(t, w.base, "GET", co+"/wakes?dueBy="+strings.ReplaceAll(c.dueBy, "+", "%2B"), w.boardTk, nil)
		var list api.WakeList
		if status != 200 || json.Unmarshal(b, &list) != nil || len(list.Wakes) != c.n {
			t.Errorf("dueBy=%s (wake due %s): %d %s, want %d wakes", c.dueBy, wakes[0].DueAt, status, b, c.n)
		}
	}
	ev := `{"schema":"paperclip.prp.event.v1","sourceEventId":"s:1","sourceSeq":1,"sourceInstanceId":"s","sourceKind":"runner","runId":"run-1","eventType":"item.delta","schemaVersion":1,"priority":2,"emittedAt":"last tuesday","payload":{}}`
	if status, _, b := call(t, w.base, "POST", co+"/events", w.runTok, []byte(ev)); status != 400 || !strings.Contains(string(b), "emittedAt") {
		t.Errorf("an event with emittedAt \"last tuesday\": %d %s, want 400 naming emittedAt", status, b)
	}
}

// TestTextFieldsValidated: every string of a request body (values and member names, on
// board and agent routes) must be valid UTF-8 without NUL: otherwise 400
// invalid_request naming the field's path, and nothing is stored. A literal U+FFFD or
// its escape is text like any other. Bodies nested deeper than api.MaxBodyDepth are 400
// too, cheaply.
func TestTextFieldsValidated(t *testing.T) {
	t.Parallel()
	w := newBoardWorld(t)
	co := "/api/companies/" + w.co.ID()
	comment := co + "/issues/" + w.issue + "/comments"
	command := func(body string) []byte {
		return []byte(`{"runId":"run-1","idempotencyKey":"k","command":{"kind":"report_progress","body":` + body + `}}`)
	}
	deep := strings.Repeat("[", 9000) + strings.Repeat("]", 9000)
	for _, c := range []struct {
		name, path, token string
		body              []byte
		want              string
	}{
		{"invalid UTF-8 in a comment", comment, w.boardTk, []byte("{\"body\":\"caf\xe9\"}"), "$.body: the value is not valid UTF-8"},
		{"truncated UTF-8 sequence", comment, w.boardTk, []byte("{\"body\":\"\xe2\x82\"}"), "$.body: the value is not valid UTF-8"},
		{"lone surrogate escape", comment, w.boardTk, []byte(`{"body":"a\ud800b"}`), "$.body: the value is not valid UTF-8"},
		{"NUL in a comment", comment, w.boardTk, []byte(`{"body":"a\u0000b"}`), "$.body: the value contains NUL (U+0000)"},
		{"NUL in a command", co + "/commands", w.runTok, command(`"x\u0000"`), "$.command.body: the value contains NUL"},
		{"invalid UTF-8 in an issue title", co + "/issues", w.boardTk, []byte("{\"title\":\"\xff\xfe\"}"), "$.title: the value is not valid UTF-8"},
		{"invalid UTF-8 in a member name", co + "/agents", w.boardTk, []byte("{\"name\":\"a\",\"role\":\"r\",\"adapterConfig\":{\"args\":[\"ok\",{\"k\xc3\":1}]}}"),
			"$.adapterConfig.args[1]['k\ufffd']: a member name is not valid UTF-8"},
		{"NUL in an event payload", co + "/events", w.runTok, []byte(`{"eventId":"e1","runId":"run-1","sequence":1,"type":"run.started","data":{"a b":"\u0000"}}`),
			"$.data['a b']: the value contains NUL"},
		{"9000-deep body", co + "/agents", w.boardTk, []byte(`{"name":"a","role":"r","adapterConfig":{"x":` + deep + `}}`),
			"the request body nests objects and arrays deeper than 128 levels"},
	} {
		status, code, b := call(t, w.base, "POST", c.path, c.token, c.body)
		var e api.Error
		_ = json.Unmarshal(b, &e)
		if status != 400 || code != "invalid_request" || !strings.Contains(e.Message, c.want) {
			t.Errorf("%s: %d %s, want 400 invalid_request with %q", c.name, status, b, c.want)
		}
	}
	st, err := w.co.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Comments) != 0 || len(st.Tasks) != 1 || len(st.Actors) != 1 || len(st.Runs[0].Events) != 0 {
		t.Errorf("refused requests stored something: %d comments, %d tasks, %d actors, %d events", len(st.Comments), len(st.Tasks), len(st.Actors), len(st.Runs[0].Events))
	}
	// U+FFFD itself, literal or escaped, and other escapes are ordinary text.
	for _, body := range []string{"{\"body\":\"\xef\xbf\xbd literal\"}", `{"body":"\ufffd escaped, \ud83d\ude00 paired, \t tab"}`} {
		if status, _, b := call(t, w.base, "POST", comment, w.boardTk, []byte(body)); status != 201 {
			t.Errorf("comment %q: %d %s, want 201", body, status, b)
		}
	}
}
