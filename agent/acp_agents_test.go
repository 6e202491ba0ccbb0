package agent

import (
	"strings"
	"testing"

	"github.com/agentproof/agentproof/agent/driver"
)

// TestCodexConfined: a Codex session launched inside a sandbox lease runs without
// Codex's own command sandbox (the lease forbids the user namespaces it needs) and
// with its approvals on; on the host it keeps workspace-write.
func TestCodexConfined(t *testing.T) {
	t.Parallel()
	for _, confined := range []bool{false, true} {
		d := &ACPDriver{agent: driver.ACPCodex}
		p, err := d.realPlan(RunEnv{}, t.TempDir(), "http://127.0.0.1:1/runs/1/v1", confined)
		if err != nil {
			t.Fatal(err)
		}
		want := `sandbox_mode="` + CodexSandboxWorkspaceWrite + `"`
		if confined {
			want = `sandbox_mode="` + CodexSandboxNone + `"`
		}
		args := strings.Join(p.args, " ")
		if !strings.Contains(args, want) || !strings.Contains(args, `approval_policy="untrusted"`) {
			t.Errorf("confined %v: args %q, want %s and untrusted approvals", confined, args, want)
		}
	}
}
