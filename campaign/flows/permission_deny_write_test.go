package flows

import (
	"testing"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
)

// TestWrites: the declined-write flow declines a permission whose tool kind can change
// the workspace or whose locations name the case's file, and approves the rest (the
// semantic tools of the MCP server that Claude Code and Gemini CLI ask for, reads).
func TestWrites(t *testing.T) {
	t.Parallel()
	s := &Session{Workspace: "/ws", Rendered: &catalog.RenderedCase{WorkspaceFile: "proof.txt"}}
	tests := []struct {
		name string
		p    api.Permission
		want bool
	}{
		{"edit", api.Permission{Kind: "edit", Locations: []string{"/ws/proof.txt"}}, true},
		{"edit elsewhere", api.Permission{Kind: "edit", Locations: []string{"/ws/other.txt"}}, true},
		{"delete", api.Permission{Kind: "delete"}, true},
		{"move", api.Permission{Kind: "move"}, true},
		{"command", api.Permission{Kind: "execute", Title: "printf '%s' x > proof.txt"}, true},
		{"unknown kind at the file", api.Permission{Kind: "other", Locations: []string{"/ws/proof.txt"}}, true},
		{"relative location", api.Permission{Locations: []string{"proof.txt"}}, true},
		{"mcp tool", api.Permission{Kind: "other", Title: "mcp__agentproof__finish_task"}, false},
		{"no kind", api.Permission{Title: "finish_task"}, false},
		{"read of the file's directory", api.Permission{Kind: "read", Locations: []string{"/ws"}}, false},
		{"fetch", api.Permission{Kind: "fetch"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := writes(tt.p, s); got != tt.want {
				t.Errorf("writes(%+v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}
