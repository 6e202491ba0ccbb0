package mcp_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/mcp"
)

// TestDecodeArguments: argument validation against the published schemas, all problems
// reported together.
func TestDecodeArguments(t *testing.T) {
	t.Parallel()
	hex64 := strings.Repeat("ab", 32)
	cases := []struct {
		name, tool, raw string
		wantErr         []string // substrings of the error; nil: valid
	}{
		{"finish ok", "finish_task", `{"summary":"done"}`, nil},
		{"finish present", "finish_task", `{"summary":"done","present":false}`, nil},
		{"no arguments for a read tool", "get_task_context", ``, nil},
		{"null arguments", "list_documents", `null`, nil},
		{"missing required", "finish_task", `{}`, []string{"missing property 'summary'"}},
		{"empty summary", "finish_task", `{"summary":""}`, []string{"at /summary"}},
		{"summary too long", "finish_task", `{"summary":"` + strings.Repeat("x", 12001) + `"}`, []string{"at /summary"}},
		{"unknown argument", "report_progress", `{"body":"b","kind":"finish_task"}`, []string{"'kind' not allowed"}},
		{"present not on write_document", "write_document", `{"key":"k","title":"t","body":"b","present":true}`, []string{"'present' not allowed"}},
		{"wrong type", "report_progress", `{"body":7}`, []string{"at /body"}},
		{"enum", "create_task", `{"title":"t","priority":"urgent"}`, []string{"at /priority"}},
		{"status enum", "create_task", `{"title":"t","status":"done"}`, []string{"at /status"}},
		{"all problems together", "register_deliverable", `{"filename":"","contentType":"text/plain","byteSize":-1,"sha256":"XYZ","contentRef":"r"}`,
			[]string{"at /filename", "at /byteSize", "at /sha256", "missing property 'title'"}},
		{"deliverable ok", "register_deliverable", `{"filename":"a.txt","contentType":"text/plain","byteSize":3,"sha256":"` + hex64 + `","contentRef":"a.txt","title":"A"}`, nil},
		{"integer not fraction", "schedule_wake", `{"reason":"manual","delayTicks":1.5}`, []string{"at /delayTicks"}},
		{"wake reason enum", "schedule_wake", `{"reason":"whenever","delayTicks":1}`, []string{"at /reason"}},
		{"too many ids", "set_dependencies", `{"blockedByTaskIds":[` + strings.Repeat(`"t",`, 50) + `"t"]}`, []string{"at /blockedByTaskIds"}},
		{"empty id list clears", "set_dependencies", `{"blockedByTaskIds":[]}`, nil},
		{"payload must be an object", "request_approval", `{"approvalType":"deploy","payload":[1]}`, []string{"at /payload"}},
		{"skill name pattern", "create_skill", `{"name":"Bad Name","description":"d","markdown":"m"}`, []string{"at /name"}},
		{"not an object", "finish_task", `["summary"]`, []string{"one JSON object"}},
		{"trailing data", "finish_task", `{"summary":"a"} {}`, []string{"trailing data"}},
		{"not JSON", "finish_task", `{"summary":`, []string{"one JSON object"}},
		{"unknown tool", "delete_everything", `{}`, []string{"unknown tool"}},
		{"too large", "write_document", `{"key":"k","title":"t","body":"` + strings.Repeat("x", mcp.MaxArgumentBytes) + `"}`, []string{"limit"}},
		{"read revision", "read_document", `{"key":"plan","revision":0}`, []string{"at /revision"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			args, err := mcp.DecodeArguments(c.tool, []byte(c.raw))
			if c.wantErr == nil {
				if err != nil || args == nil {
					t.Fatalf("DecodeArguments = %v, %v; want valid", args, err)
				}
				return
			}
			var ae *mcp.ArgumentError
			if !errors.As(err, &ae) {
				t.Fatalf("error %v (%T), want *ArgumentError", err, err)
			}
			if !strings.HasPrefix(err.Error(), "invalid_arguments: "+c.tool+": ") {
				t.Errorf("error %q does not start with the code and tool", err)
			}
			for _, w := range c.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestDecodeArgumentsKeepsNumbers: numbers stay json.Number, so the command carries the
// model's own number text (byteSize, delayTicks, expectedStatusVersion).
func TestDecodeArgumentsKeepsNumbers(t *testing.T) {
	t.Parallel()
	args, err := mcp.DecodeArguments("schedule_wake", []byte(`{"reason":"manual","delayTicks":30}`))
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := args["delayTicks"].(json.Number); !ok || n.String() != "30" {
		t.Fatalf("delayTicks = %#v", args["delayTicks"])
	}
}

// TestIdempotencyKey: deterministic in (run, tool, arguments), independent of argument
// order, different when any of them differs.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	key := func(run, tool, raw string) string {
		t.Helper()
		var args map[string]any
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			t.Fatal(err)
		}
		k, err := mcp.IdempotencyKey(run, tool, args)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := key("run-1", "write_document", `{"key":"plan","title":"P","body":"b"}`)
	if !strings.HasPrefix(base, "agentproof-mcp/write_document/") || len(base) != len("agentproof-mcp/write_document/")+32 {
		t.Fatalf("key %q", base)
	}
	if got := key("run-1", "write_document", `{"body":"b","title":"P","key":"plan"}`); got != base {
		t.Errorf("argument order changed the key: %s vs %s", got, base)
	}
	for _, other := range []string{
		key("run-2", "write_document", `{"key":"plan","title":"P","body":"b"}`),
		key("run-1", "report_progress", `{"key":"plan","title":"P","body":"b"}`),
		key("run-1", "write_document", `{"key":"plan","title":"P","body":"c"}`),
	} {
		if other == base {
			t.Errorf("a different call got the same key %s", base)
		}
	}
}

// TestRunIDFromToken: the run claim of an agent token, unverified; anything else is not ok.
func TestRunIDFromToken(t *testing.T) {
	t.Parallel()
	claims := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	cases := []struct {
		token, run string
		ok         bool
	}{
		{"apr1." + claims(`{"c":"co","a":"actor-1","r":"run-7"}`) + ".mac", "run-7", true},
		{"apr1." + claims(`{"c":"co","a":"actor-1"}`) + ".mac", "", false},
		{"apr1." + claims(`{"r":"  "}`) + ".mac", "", false},
		{"apr1.!!!.mac", "", false},
		{"apr1." + claims(`{"r":"run-7"}`), "", false},
		{"board-token", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		run, ok := mcp.RunIDFromToken(c.token)
		if run != c.run || ok != c.ok {
			t.Errorf("RunIDFromToken(%q) = %q, %v; want %q, %v", c.token, run, ok, c.run, c.ok)
		}
	}
}

// FuzzDecodeArguments: untrusted tool arguments never panic; accepted arguments are an
// object whose keys are declared properties, with a stable idempotency key.
func FuzzDecodeArguments(f *testing.F) {
	tools := mcp.Tools()
	for _, s := range []string{`{"summary":"x"}`, `{}`, `null`, `[]`, `{"key":"k","title":"t","body":"b","baseRevisionId":"r"}`,
		`{"blockedByTaskIds":["a","b"]}`, `{"delayTicks":1e400,"reason":"manual"}`, `{"byteSize":-0}`, "{\"summary\":\"\xff\"}"} {
		for i := range tools {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		tl := tools[int(which)%len(tools)]
		args, err := mcp.DecodeArguments(tl.Name, raw)
		if err != nil {
			var ae *mcp.ArgumentError
			if !errors.As(err, &ae) || len(ae.Problems) == 0 {
				t.Fatalf("error %v is not an ArgumentError with problems", err)
			}
			return
		}
		props := tl.InputSchema["properties"].(map[string]any)
		for k := range args {
			if _, ok := props[k]; !ok {
				t.Fatalf("accepted undeclared argument %q", k)
			}
		}
		for _, r := range tl.Required {
			if _, ok := args[r]; !ok {
				t.Fatalf("accepted arguments without required %q", r)
			}
		}
		k1, err1 := mcp.IdempotencyKey("run-1", tl.Name, args)
		k2, err2 := mcp.IdempotencyKey("run-1", tl.Name, args)
		if err1 != nil || err2 != nil || k1 != k2 {
			t.Fatalf("idempotency key unstable: %q %v / %q %v", k1, err1, k2, err2)
		}
	})
}

// FuzzRunIDFromToken: never panics; an accepted run id is not blank.
func FuzzRunIDFromToken(f *testing.F) {
	f.Add("apr1.eyJyIjoicnVuLTEifQ.mac")
	f.Add("apr1..")
	f.Add("")
	f.Fuzz(func(t *testing.T, tok string) {
		if run, ok := mcp.RunIDFromToken(tok); ok && strings.TrimSpace(run) == "" {
			t.Fatalf("blank run id accepted from %q", tok)
		}
	})
}
