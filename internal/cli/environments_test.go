package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/environment"

	"github.com/agentproof/agentproof/verdict"
)

// TestEnvironmentsProbe: `environments probe --json` prints one report per provider
// (local available; the sandbox's checks each named) and the text form says the same.
// With CI=true the sandbox must be available: .ci/run installs bubblewrap and runs as
// root.
func TestEnvironmentsProbe(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := Main([]string{"environments", "probe", "--json"}, strings.NewReader(""), &out, &errb); verdict.ExitCode(code) != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var reports []environment.ProbeReport
	if err := json.Unmarshal(out.Bytes(), &reports); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(reports) != 3 || reports[0].Provider != environment.ProviderLocal || !reports[0].Available || reports[1].Provider != environment.ProviderSandbox ||
		reports[2].Provider != environment.ProviderContainer {
		t.Fatalf("reports %+v", reports)
	}
	// The container's report names the engine it found and says why it cannot serve
	// (here at least: this race-enabled test binary is not static).
	if ctr := reports[2]; len(ctr.Checks) < 3 || ctr.Checks[0].Name != "engine" {
		t.Errorf("container checks %+v", ctr.Checks)
	}
	sb := reports[1]
	if len(sb.Checks) < 5 {
		t.Errorf("sandbox checks %+v", sb.Checks)
	}
	if os.Getenv("CI") == "true" && !sb.Available {
		t.Errorf("CI=true but the sandbox is unavailable: %v", sb.Missing())
	}
	out.Reset()
	if code := Main([]string{"environments", "probe"}, strings.NewReader(""), &out, &errb); verdict.ExitCode(code) != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	text := out.String()
	if !strings.Contains(text, "local: available\n") || !strings.Contains(text, "sandbox: ") || !strings.Contains(text, " bwrap ") || !strings.Contains(text, "container: ") {
		t.Errorf("text report:\n%s", text)
	}
	if !sb.Available && !strings.Contains(text, "MISSING") {
		t.Errorf("an unavailable sandbox must show what is missing:\n%s", text)
	}
}
