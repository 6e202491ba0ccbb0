package scriptedmodel

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentproof/agentproof/catalog"
)

// homeTools are a CLI's tools as its Chat Completions requests offer them (trimmed).
const homeTools = `[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}},{"type":"function","function":{"name":"agentproof_register_deliverable","parameters":{"type":"object"}}},{"type":"function","function":{"name":"agentproof_finish_task","parameters":{"type":"object"}}}]`

// sh runs a derived command in a real POSIX shell with AGENT_HOME set, in dir.
func sh(t *testing.T, dir, home, cmd string) string {
	t.Helper()
	c := exec.Command("/bin/sh", "-c", cmd)
	c.Dir, c.Env = dir, []string{"PATH=/usr/bin:/bin", "AGENT_HOME=" + home, "AGENTPROOF_RUN_ID=run-7"}
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	return string(out)
}

// TestHomeEditsAndReadBack: the derived shell commands of home edits write exactly
// the bytes (a text under nested directories, a binary from writeHex) under
// $AGENT_HOME; a command step reading its home becomes a shell call printing the
// values and a call whose arguments the model captures from that tool result —
// contentBase64, sha256 and byteSize (an integer) of the very bytes, and a text.
func TestHomeEditsAndReadBack(t *testing.T) {
	t.Parallel()
	text, bin := "NESTED-7\n", "89006eff0d0a1a0a"
	ref := &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{
		{Trigger: "assignment", Steps: []*catalog.ReferenceStep{
			{Edit: &catalog.WorkspaceEdit{Root: catalog.EditRootAgentHome, Path: "notes/deep/recall.txt", Write: &text}},
			{Edit: &catalog.WorkspaceEdit{Root: catalog.EditRootAgentHome, Path: "bin/key.bin", WriteHex: &bin}},
			{Command: "finish_task", Args: map[string]any{"summary": "saved"}, Present: true},
		}},
		{Trigger: "assignment", Task: 2, Steps: []*catalog.ReferenceStep{
			{Command: "register_deliverable", Args: map[string]any{"filename": "k.bin", "contentType": "application/octet-stream", "title": "k"},
				FromHome: map[string]string{"contentBase64": "bin/key.bin"}},
			{Command: "finish_task", FromHome: map[string]string{"summary": "notes/deep/recall.txt"}, Present: true},
		}},
	}}
	scripts, err := FromReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	ws, home := t.TempDir(), t.TempDir()
	for _, st := range scripts[0].Steps[:2] {
		sh(t, ws, home, st.Args["command"].(string))
	}
	got, err := os.ReadFile(filepath.Join(home, "bin", "key.bin"))
	if want, _ := hex.DecodeString(bin); err != nil || string(got) != string(want) {
		t.Fatalf("bin/key.bin = %x, %v; want %s", got, err, bin)
	}
	if b, err := os.ReadFile(filepath.Join(home, "notes", "deep", "recall.txt")); err != nil || string(b) != text {
		t.Fatalf("recall.txt = %q, %v", b, err)
	}
	steps := scripts[1].Steps
	if len(steps) != 5 || steps[0].Call != RoleShell || steps[1].Capture == nil || steps[2].Call != RoleShell || steps[3].Capture == nil {
		t.Fatalf("read-back steps %+v", steps)
	}
	// the model sees only the CLI's tool result of its read command
	decide := func(k int, output string) (map[string]any, string) {
		t.Helper()
		body := `{"messages":[{"role":"user","content":"go"}`
		for i := 0; i < k; i++ {
			body += `,{"role":"assistant","content":"","tool_calls":[{"id":"c` + string(rune('a'+i)) + `","type":"function","function":{"name":"bash","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c` + string(rune('a'+i)) + `","content":` + quoteJSON(output) + `}`
		}
		req, err := DecodeRequest(FormatChat, []byte(body+`],"tools":`+homeTools+`}`))
		if err != nil {
			t.Fatal(err)
		}
		r, err := scripts[1].Decide(req)
		if err != nil {
			t.Fatal(err)
		}
		var args map[string]any
		if err := json.Unmarshal([]byte(r.Arguments), &args); err != nil {
			t.Fatal(err)
		}
		return args, r.ToolName
	}
	args, tool := decide(1, "Exit code: 0\nOutput:\n"+sh(t, ws, home, steps[0].Args["command"].(string)))
	sum := sha256.Sum256(got)
	if tool != "agentproof_register_deliverable" || args["contentBase64"] != base64.StdEncoding.EncodeToString(got) ||
		args["sha256"] != hex.EncodeToString(sum[:]) || args["byteSize"] != float64(len(got)) || args["filename"] != "k.bin" {
		t.Errorf("register_deliverable %s %v", tool, args)
	}
	args, tool = decide(3, sh(t, ws, home, steps[2].Args["command"].(string)))
	if tool != "agentproof_finish_task" || args["summary"] != "NESTED-7" {
		t.Errorf("finish_task %s %v", tool, args)
	}
	// a read whose output does not carry the values is refused (no invented bytes)
	req, _ := DecodeRequest(FormatChat, []byte(`{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"base64: bin/key.bin: No such file or directory"}],"tools":`+homeTools+`}`))
	if _, err := scripts[1].Decide(req); err == nil {
		t.Error("a read-back without the values was answered")
	}
	// the wait step: the run id written, the release awaited
	cmd, err := WaitCommand(&catalog.WorkspaceWait{Ready: "ready.txt", Release: "ready.txt.release", TimeoutMs: 100})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "ready.txt.release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, ws, home, cmd)
	if b, _ := os.ReadFile(filepath.Join(ws, "ready.txt")); string(b) != "run-7" {
		t.Errorf("ready.txt = %q, want the run id", b)
	}
	os.Remove(filepath.Join(ws, "ready.txt.release"))
	c := exec.Command("/bin/sh", "-c", cmd)
	c.Dir = ws
	if err := c.Run(); err == nil {
		t.Error("a wait whose release never appears succeeded")
	}
	if _, err := WaitCommand(&catalog.WorkspaceWait{Ready: "../x", Release: "y", TimeoutMs: 1}); err == nil {
		t.Error("a wait outside the workspace was accepted")
	}
}
