package script_test

import (
	"encoding/json"
	"testing"

	"github.com/agentproof/agentproof/agent/script"
)

// TestNoncePattern: 1–64 ASCII letters, digits, '_' or '-'; nothing else.
func TestNoncePattern(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{"a": true, "0123456789abcdef": true, "A_b-9": true, string(make([]byte, 65)): false,
		"": false, "a b": false, "a.b": false, "é": false, "a\n": false} {
		if got := script.NoncePattern().MatchString(s); got != want {
			t.Errorf("NoncePattern(%q) = %v", s, got)
		}
	}
}

// TestScriptJSON: a script's JSON form (how a rendered script reaches the built-in agent
// process) round-trips and leaves empty fields out.
func TestScriptJSON(t *testing.T) {
	t.Parallel()
	w := "hello"
	in := &script.Script{Turns: []*script.Turn{{Trigger: script.Triggers[0], Steps: []*script.Step{
		{Command: "finish_task", Present: true},
		{Edit: &script.Edit{Root: script.RootAgentHome, Path: "notes.txt", Write: &w}},
		{Wait: &script.Wait{Ready: "ready", Release: "release", TimeoutMs: 1000}},
	}}}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"turns":[{"trigger":"assignment","steps":[{"command":"finish_task","present":true},` +
		`{"edit":{"root":"agent_home","path":"notes.txt","write":"hello"}},{"wait":{"ready":"ready","release":"release","timeoutMs":1000}}]}]}`
	if string(b) != want {
		t.Fatalf("JSON %s\nwant %s", b, want)
	}
	var out script.Script
	if err := json.Unmarshal(b, &out); err != nil || *out.Turns[0].Steps[1].Edit.Write != w || out.Turns[0].Steps[2].Wait.TimeoutMs != 1000 {
		t.Fatalf("decode: %+v, %v", out, err)
	}
}
