package attempt

import (
	"testing"

	"github.com/agentproof/agentproof/agent/driver"
)

// TestStateDirFor: an agent whose command sandbox mounts a fresh /dev (acp:codex) gets
// its instance home in the temp root when the state directory is under /dev; every
// other agent, and every state directory elsewhere, keeps the state directory.
func TestStateDirFor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		stateDir, driver, want string
		moved                  bool
	}{
		{"/dev/shm", "acp:codex", "", true},
		{"/dev/shm/x/../y", "acp:codex", "", true},
		{"/dev", "acp:codex", "", true},
		{"/devices", "acp:codex", "/devices", false},
		{"/var/tmp", "acp:codex", "/var/tmp", false},
		{"", "acp:codex", "", false},
		{"/dev/shm", "acp:opencode", "/dev/shm", false},
		{"/dev/shm", "exec:codex", "/dev/shm", false},
		{"/dev/shm", "fixture:pass", "/dev/shm", false},
		{"/dev/shm", "", "/dev/shm", false}, // no driver
	} {
		d, _ := driver.Parse(c.driver)
		if got, moved := stateDirFor(c.stateDir, d); got != c.want || moved != c.moved {
			t.Errorf("stateDirFor(%q, %q) = %q, %v; want %q, %v", c.stateDir, c.driver, got, moved, c.want, c.moved)
		}
	}
}
