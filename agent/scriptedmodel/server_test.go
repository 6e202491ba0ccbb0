package scriptedmodel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentproof/agentproof/redact"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

func serve(t *testing.T, opts Options) (*Server, *Running) {
	t.Helper()
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	r, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return srv, r
}

func post(t *testing.T, url string, body string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestServerConversation plays a whole script over real HTTP in each wire format,
// streamed (optionally in 1–7-byte pieces) and not, and checks what a client decodes.
func TestServerConversation(t *testing.T) {
	t.Parallel()
	type turn struct {
		body     string
		wantCall string
		wantText string
	}
	convs := map[Format][]turn{
		FormatResponses: {
			{`{"stream":true,"input":[{"role":"user","content":"go"}],"tools":` + codexTools + `}`, "exec_command", ""},
			{`{"stream":true,"input":[{"role":"user","content":"go"},{"type":"function_call","call_id":"call_ap_1","name":"exec_command","arguments":"{}"},{"type":"function_call_output","call_id":"call_ap_1","output":"exit code 0"}],"tools":` + codexTools + `}`, "mcp__agentproof__finish_task", ""},
			{`{"stream":false,"input":[{"type":"function_call"},{"type":"function_call_output","output":"a"},{"type":"function_call"},{"type":"function_call_output","output":"b"}],"tools":` + codexTools + `}`, "", "OK_n1"},
		},
		FormatChat: {
			{`{"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"go"}],"tools":` + opencodeChat + `}`, "bash", ""},
			{`{"stream":true,"messages":[{"role":"user","content":"title?"}]}`, "", DefaultAuxAnswer},
			{`{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"bash"}}]},{"role":"tool","content":"exit code 0"}],"tools":` + opencodeChat + `}`, "agentproof_finish_task", ""},
		},
		FormatMessages: {
			{`{"stream":true,"messages":[{"role":"user","content":"go"}],"tools":` + claudeTools + `}`, "Bash", ""},
			{`{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"exit code 0"}]},{"role":"assistant","content":[{"type":"tool_use","id":"u","name":"x","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"u","content":"ok"}]}],"stream":true,"tools":` + claudeTools + `}`, "", "OK_n1"},
		},
	}
	paths := map[Format]string{FormatResponses: "/responses", FormatChat: "/chat/completions", FormatMessages: "/messages"}
	for _, chunked := range []bool{false, true} {
		for f, turns := range convs {
			name := string(f)
			if chunked {
				name += "/chunked"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				srv, r := serve(t, Options{Script: mustScript(t, threeSteps), Chunked: chunked, ChunkSeed: 7})
				for i, tc := range turns {
					resp, body := post(t, r.URL+paths[f]+"?beta=true", tc.body)
					if resp.StatusCode != 200 {
						t.Fatalf("turn %d: status %d: %s", i+1, resp.StatusCode, body)
					}
					call, text := decodeReply(t, f, resp.Header.Get("Content-Type"), body)
					if call != tc.wantCall || text != tc.wantText {
						t.Errorf("turn %d: call %q text %q, want call %q text %q", i+1, call, text, tc.wantCall, tc.wantText)
					}
				}
				if n := len(srv.Requests()); n != len(turns) {
					t.Errorf("logged %d requests, want %d", n, len(turns))
				}
			})
		}
	}
}

// decodeReply extracts the tool name or text a client would see, from a stream (checked
// for conformance) or a JSON body.
func decodeReply(t *testing.T, f Format, contentType string, body []byte) (call, text string) {
	t.Helper()
	if strings.HasPrefix(contentType, "text/event-stream") {
		events, err := ReadEvents(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			var m map[string]any
			if json.Unmarshal([]byte(ev.Data), &m) != nil {
				continue
			}
			switch f {
			case FormatResponses:
				if m["type"] == "response.output_item.done" {
					item := m["item"].(map[string]any)
					if item["type"] == "function_call" {
						call = item["name"].(string)
					} else {
						text = item["content"].([]any)[0].(map[string]any)["text"].(string)
					}
				}
			case FormatChat:
				for _, c := range m["choices"].([]any) {
					d := c.(map[string]any)["delta"].(map[string]any)
					if tc, ok := d["tool_calls"].([]any); ok {
						call = tc[0].(map[string]any)["function"].(map[string]any)["name"].(string)
					}
					if s, ok := d["content"].(string); ok {
						text += s
					}
				}
			case FormatMessages:
				if m["type"] == "content_block_start" {
					if b := m["content_block"].(map[string]any); b["type"] == "tool_use" {
						call = b["name"].(string)
					}
				}
				if m["type"] == "content_block_delta" {
					if s, ok := m["delta"].(map[string]any)["text"].(string); ok {
						text += s
					}
				}
			}
		}
		return call, text
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body is not JSON: %s", body)
	}
	switch f {
	case FormatResponses:
		item := m["output"].([]any)[0].(map[string]any)
		if item["type"] == "function_call" {
			return item["name"].(string), ""
		}
		return "", item["content"].([]any)[0].(map[string]any)["text"].(string)
	case FormatChat:
		msg := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
		if tc, ok := msg["tool_calls"].([]any); ok {
			return tc[0].(map[string]any)["function"].(map[string]any)["name"].(string), ""
		}
		return "", msg["content"].(string)
	default:
		b := m["content"].([]any)[0].(map[string]any)
		if b["type"] == "tool_use" {
			return b["name"].(string), ""
		}
		return "", b["text"].(string)
	}
}

// TestServerRefusesNamingTheStep: a request that does not fit gets 400 with a JSON error
// naming the step, in a shape OpenAI and Anthropic clients both read, and is logged.
func TestServerRefusesNamingTheStep(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	srv, r := serve(t, Options{Script: mustScript(t, "steps:\n  - call: finish_task\n"), Log: &log})
	resp, body := post(t, r.URL+"/chat/completions", `{"stream":true,"messages":[{"role":"user","content":"go"}],"tools":[{"type":"function","function":{"name":"bash"}}]}`)
	if resp.StatusCode != 400 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatal(err)
	}
	want := ErrorPrefix + `step 1 (call finish_task, line 2): the request offers no tool for "finish_task"; offered: bash`
	if e.Type != "error" || e.Error.Type != "invalid_request_error" || e.Error.Message != want {
		t.Errorf("error body = %s\nwant message %q", body, want)
	}
	got := srv.Requests()
	if len(got) != 1 || got[0].Status != 400 || got[0].Step != 1 || !strings.Contains(got[0].Error, "step 1") {
		t.Errorf("log = %+v", got)
	}
	if !bytes.Contains(log.Bytes(), []byte(`"status":400`)) {
		t.Errorf("log file lacks the refusal: %s", log.Bytes())
	}
	// Not JSON at all: 400 too, naming the format.
	resp, body = post(t, r.URL+"/responses", `nope`)
	if resp.StatusCode != 400 || !bytes.Contains(body, []byte("decoding a responses request")) {
		t.Errorf("bad body: %d %s", resp.StatusCode, body)
	}
}

// TestServerLogRedacts: sensitive headers are redacted whole, secrets and secret shapes
// inside other headers and the body are redacted, and each line is one JSON object.
func TestServerLogRedacts(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-value-0123456789"
	var log syncBuffer
	_, r := serve(t, Options{Script: mustScript(t, threeSteps), Log: &log, Secrets: redact.NewSet(secret), Clock: func() time.Time { return time.Unix(1764460800, 0) }})
	post(t, r.URL+"/messages", `{"messages":[{"role":"user","content":"key `+secret+`"}],"metadata":{"api_key":"abc"}}`,
		"X-Api-Key", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789", "Authorization", "Bearer tok", "X-Custom", "carry "+secret)
	lines := bytes.Split(bytes.TrimSpace(log.Bytes()), []byte("\n"))
	if len(lines) != 1 {
		t.Fatalf("log lines = %d", len(lines))
	}
	if bytes.Contains(lines[0], []byte(secret)) || bytes.Contains(lines[0], []byte("abcdefghijklmnopqrstuvwxyz")) || bytes.Contains(lines[0], []byte("Bearer tok")) {
		t.Errorf("log leaks: %s", lines[0])
	}
	var e LogEntry
	if err := json.Unmarshal(lines[0], &e); err != nil {
		t.Fatal(err)
	}
	if e.Headers["x-api-key"][0] != redact.Redacted || e.Headers["authorization"][0] != redact.Redacted || !strings.Contains(e.Headers["x-custom"][0], redact.Redacted) {
		t.Errorf("headers = %v", e.Headers)
	}
	if e.Schema != LogSchema || e.Seq != 1 || e.Time != "2025-11-30T00:00:00Z" || e.Format != FormatMessages || e.Step != 0 || e.Reply != "aux answer" || e.Usage == nil || e.BodySHA == "" {
		t.Errorf("entry = %+v", e)
	}
	if !bytes.Contains(e.Body, []byte(`"api_key":"[REDACTED]"`)) {
		t.Errorf("body not sanitised: %s", e.Body)
	}
}

func TestServerOtherRoutes(t *testing.T) {
	t.Parallel()
	srv, r := serve(t, Options{Script: mustScript(t, "model: m7\nsteps: [{answer: x}]\n")})
	resp, err := http.Get(r.URL + "/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&models); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if models.Object != "list" || len(models.Data) != 1 || models.Data[0].ID != "m7" || models.Data[0].Type != "model" {
		t.Errorf("models = %+v", models)
	}
	head, err := http.Head("http://" + r.Addr + "/")
	if err != nil || head.StatusCode != 200 {
		t.Errorf("HEAD / = %v %v", head, err)
	}
	nf, err := http.Get("http://" + r.Addr + "/v1/embeddings")
	if err != nil || nf.StatusCode != 404 {
		t.Errorf("GET /v1/embeddings = %v %v", nf, err)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("logged %d requests, want 3", n)
	}
}

// TestServerKeepAliveHold: with a hold, comments come first and the events after them
// are unchanged.
func TestServerKeepAliveHold(t *testing.T) {
	t.Parallel()
	_, r := serve(t, Options{Script: mustScript(t, threeSteps), Hold: 60 * time.Millisecond, KeepAlive: 10 * time.Millisecond})
	resp, body := post(t, r.URL+"/responses", `{"stream":true,"input":"go","tools":`+codexTools+`}`)
	if resp.StatusCode != 200 || !bytes.HasPrefix(body, []byte(": keepalive\n\n")) {
		t.Fatalf("status %d, body starts %q", resp.StatusCode, body[:min(len(body), 40)])
	}
	call, _ := decodeReply(t, FormatResponses, resp.Header.Get("Content-Type"), body)
	if call != "exec_command" {
		t.Errorf("call = %q", call)
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	events := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "event: ") {
			events++
		}
	}
	if events != 7 { // created, in_progress, item added, args delta, args done, item done, completed
		t.Errorf("%d events after the hold, want 7", events)
	}
}

func TestListenRefusesNonLoopback(t *testing.T) {
	t.Parallel()
	srv, err := New(Options{Script: mustScript(t, threeSteps)})
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0", "example.com:80", "nope"} {
		_, err := srv.Listen(addr)
		var ae *AddrError
		if !errors.As(err, &ae) {
			t.Errorf("Listen(%q) = %v, want an AddrError", addr, err)
		}
	}
	if _, err := New(Options{}); err == nil {
		t.Error("New without a script succeeded")
	}
}
