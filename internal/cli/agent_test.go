package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
)

// TestAgentCmdDialsThroughApp: `agentproof agent reference` reaches the agent API
// through the app's dialAgent (the explicit dependency, client.DialAgent in Main), with
// the URL and run token of its environment; without a dialer it fails instead of
// dialing anything.
func TestAgentCmdDialsThroughApp(t *testing.T) {
	cfg, err := json.Marshal(agent.BuiltinConfig{Schema: agent.BuiltinConfigSchema, Nonce: "n1",
		Reference: &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{{Trigger: "assignment",
			Steps: []*catalog.ReferenceStep{{Command: "finish_task", Args: map[string]any{"summary": "done"}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for k, v := range map[string]string{
		agent.EnvAPIURL: "http://127.0.0.1:1/api/companies/c1", agent.EnvRunToken: "tok", agent.EnvRunID: "run-1",
		agent.EnvWorkspace: dir, agent.EnvStateDir: dir, agent.EnvConfig: string(cfg),
	} {
		t.Setenv(k, v)
	}
	refused := errors.New("refused by the test dialer")
	var gotURL, gotToken string
	dial := func(_ context.Context, url, token string) (controlplane.Port, error) {
		gotURL, gotToken = url, token
		return nil, refused
	}
	for _, tc := range []struct {
		name string
		dial agent.Dialer
		want string
	}{
		{"injected", dial, refused.Error()},
		{"none", nil, "no dialer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			root := newRootCmd(&app{stdout: &out, stderr: &out, dialAgent: tc.dial})
			root.SetArgs([]string{"agent", "reference"})
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("agent reference = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if gotURL != "http://127.0.0.1:1/api/companies/c1" || gotToken != "tok" {
		t.Errorf("dialed %q with token %q", gotURL, gotToken)
	}
}
