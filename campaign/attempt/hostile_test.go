package attempt

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/catalog"
)

// TestHostileTripwire: the tripwire hands its secret to whoever connects and counts
// the connections; one that was connected to is a leak to the agent, one that was not
// is only a note; the outside directory's files are counted in the note.
func TestHostileTripwire(t *testing.T) {
	t.Parallel()
	for _, connect := range []bool{false, true} {
		root := t.TempDir()
		h, err := startHostile(root)
		if err != nil {
			t.Fatal(err)
		}
		tg := h.targets(4242)
		if tg.ControllerPID != 4242 || tg.Outside != filepath.Join(root, outsideDirName) || tg.Tripwire == "" {
			t.Fatalf("targets %+v", tg)
		}
		if connect {
			c, err := net.Dial("tcp", tg.Tripwire)
			if err != nil {
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			_ = c.Close()
			if strings.TrimSpace(line) != h.secret || !strings.HasPrefix(h.secret, "aptripwire-") {
				t.Errorf("the tripwire said %q", line)
			}
			if err := os.WriteFile(filepath.Join(tg.Outside, "x"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		note, leak := h.stop()
		switch {
		case connect && (!strings.Contains(note, "accepted 1 connection(s)") || !strings.Contains(note, "holds 1 file(s)") || !strings.Contains(leak, "tripwire")):
			t.Errorf("connected: note %q, leak %q", note, leak)
		case !connect && (!strings.Contains(note, "accepted 0 connection(s)") || leak != ""):
			t.Errorf("not connected: note %q, leak %q", note, leak)
		}
		if strings.Contains(note+leak, h.secret) {
			t.Error("the note or the leak names the tripwire's secret")
		}
	}
	var none *hostileHold
	if note, leak := none.stop(); note != "" || leak != "" || none.targets(1) != nil {
		t.Error("a cell without hostile targets has some")
	}
}

// TestControllerCanaryEnv: the serve child's environment carries the controller
// canary; only hostile drivers get hostile targets.
func TestControllerCanaryEnv(t *testing.T) {
	t.Parallel()
	env := serveEnv("/r", "apcontroller-x")
	if !slices.Contains(env, ControllerCanaryKey+"=apcontroller-x") {
		t.Errorf("serve env %v", env)
	}
	if slices.ContainsFunc(serveEnv("/r", ""), func(kv string) bool { return strings.HasPrefix(kv, ControllerCanaryKey+"=") }) {
		t.Error("an empty canary was set")
	}
	for name, want := range map[string]bool{"hostile:connect": true, "reference": false, "acp:reference": false} {
		plan := campaign.AttemptPlan{Cell: &catalog.Cell{Profile: &catalog.Profile{Driver: driver.MustParse(name)}}}
		if got := isHostile(plan); got != want {
			t.Errorf("isHostile(%s) = %t", name, got)
		}
	}
}
