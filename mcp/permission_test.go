package mcp

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/agentproof/agentproof/agent/session"
)

// TestRelayPermission: the driver's answer is returned as it is; an unreachable relay,
// arguments that are not an object and an answer without a behavior are denials.
func TestRelayPermission(t *testing.T) {
	path := filepath.Join(t.TempDir(), session.PermissionRelayFile)
	text, err := RelayPermission(context.Background(), path, json.RawMessage(`{"tool_name":"Write","input":{}}`))
	if err == nil || !isDeny(text) {
		t.Errorf("no relay: %s, %v; want a deny and an error", text, err)
	}
	if text, err := RelayPermission(context.Background(), path, json.RawMessage(`[1]`)); err == nil || !isDeny(text) {
		t.Errorf("not an object: %s, %v", text, err)
	}
	l, err := session.ListenRelay(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	answers := []string{`{"behavior":"allow","updatedInput":{}}`, `{"ok":true}`}
	go func() {
		for _, a := range answers {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = session.ReadRelayLine(c)
			_, _ = c.Write([]byte(a + "\n"))
			_ = c.Close()
		}
	}()
	if text, err := RelayPermission(context.Background(), path, json.RawMessage(`{"tool_name":"Write","input":{}}`)); err != nil || text != answers[0] {
		t.Errorf("allowed: %s, %v", text, err)
	}
	if text, err := RelayPermission(context.Background(), path, json.RawMessage(`{"tool_name":"Write","input":{}}`)); err == nil || !isDeny(text) {
		t.Errorf("no behavior: %s, %v; want a deny", text, err)
	}
}

func isDeny(text string) bool {
	var a struct {
		Behavior string `json:"behavior"`
		Message  string `json:"message"`
	}
	return json.Unmarshal([]byte(text), &a) == nil && a.Behavior == "deny" && a.Message != ""
}
