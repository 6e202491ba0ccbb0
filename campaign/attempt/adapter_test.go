package attempt

import (
	"strings"
	"testing"

	"github.com/agentproof/agentproof/api"
)

// TestACPDriverConfig: a real ACP agent gets its pinned binary and the scripted
// model's URL; one whose package runs on Node.js also gets the Node.js the campaign
// located (and is refused without one); --live and a missing install are refused
// naming the profile.
func TestACPDriverConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   agentInput
		want api.DriverConfig
		err  string
	}{
		{"native binary", agentInput{modelURL: "http://127.0.0.1:9/", cli: PinnedCLI{Binary: "/c/codex-acp"}},
			api.DriverConfig{Binary: "/c/codex-acp", ModelBaseURL: "http://127.0.0.1:9/"}, ""},
		{"node agent", agentInput{modelURL: "http://127.0.0.1:9/", cli: PinnedCLI{Binary: "/c/dist/index.js", Node: "/usr/bin/node"}},
			api.DriverConfig{Binary: "/c/dist/index.js", Node: "/usr/bin/node", ModelBaseURL: "http://127.0.0.1:9/"}, ""},
		{"node agent without node", agentInput{cli: PinnedCLI{Binary: "/c/bundle/gemini.js"}}, api.DriverConfig{}, "no Node.js was located"},
		{"not installed", agentInput{}, api.DriverConfig{}, "is not installed"},
		{"live", agentInput{live: true, cli: PinnedCLI{Binary: "/c/codex-acp"}}, api.DriverConfig{}, "live provider"},
	}
	for _, tt := range tests {
		var dc api.DriverConfig
		err := acpDriverConfig(&dc, "pkg", "prof", tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "prof")):
			t.Errorf("%s: %v, want an error naming the profile and %q", tt.name, err, tt.err)
		case tt.err == "" && (err != nil || dc.Binary != tt.want.Binary || dc.Node != tt.want.Node || dc.ModelBaseURL != tt.want.ModelBaseURL):
			t.Errorf("%s: %+v, %v; want %+v", tt.name, dc, err, tt.want)
		}
	}
}
