package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/controlplane/conformance"

	"github.com/agentproof/agentproof/verdict"
)

// forgetfulHarness builds Ports that never start, so every case fails.
type forgetfulHarness struct{ conformance.MemoryHarness }

type unstartablePort struct{ controlplane.Port }

func (unstartablePort) Start(context.Context) error {
	return &controlplane.Error{Code: controlplane.CodeMockNotRunning, Message: "broken on purpose"}
}

func (h forgetfulHarness) New(ctx context.Context, seed controlplane.Seed) (controlplane.Port, error) {
	p, err := h.MemoryHarness.New(ctx, seed)
	return unstartablePort{p}, err
}

// TestConformanceExitsOneOnFailure: a failing port prints FAIL lines, the summary,
// and maps to exit code 1.
func TestConformanceExitsOneOnFailure(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	cmd := newConformanceCmdFor(&app{stdout: &out}, forgetfulHarness{})
	cmd.SetArgs(nil)
	err := cmd.Execute()
	if code := exitCode(err); verdict.ExitCode(code) != ExitFailed {
		t.Fatalf("exit code %d, want %d (err %v)", code, ExitFailed, err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasSuffix(last, " failed") || strings.HasSuffix(last, " 0 failed") {
		t.Fatalf("last line %q", last)
	}
	if !strings.Contains(out.String(), "FAIL  case/01-start-twice") {
		t.Fatalf("no FAIL line for case 01:\n%s", out.String())
	}
}
