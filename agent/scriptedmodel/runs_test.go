package scriptedmodel

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/catalog"
)

// TestRunSetRoutesEachRunToItsScript: run n's requests play script n from its first
// step; a run without a script and a path outside /runs/<n>/ are refused with 400
// naming the run, and every request is logged with its run.
func TestRunSetRoutesEachRunToItsScript(t *testing.T) {
	t.Parallel()
	log := &syncBuffer{}
	one := mustScript(t, "steps:\n  - answer: FIRST\n")
	two := mustScript(t, "steps:\n  - answer: SECOND\n")
	rs, err := NewRunSet([]*Script{one, two}, Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	r, err := rs.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	body := `{"stream":true,"messages":[{"role":"user","content":"go"}],"tools":` + opencodeChat + `}`
	for n, want := range map[int]string{1: "FIRST", 2: "SECOND"} {
		resp, b := post(t, r.URL+"/runs/"+string(rune('0'+n))+"/v1/chat/completions", body)
		if resp.StatusCode != 200 {
			t.Fatalf("run %d: status %d: %s", n, resp.StatusCode, b)
		}
		if _, text := decodeReply(t, FormatChat, resp.Header.Get("Content-Type"), b); text != want {
			t.Errorf("run %d answered %q, want %q", n, text, want)
		}
	}
	for _, path := range []string{"/runs/3/v1/chat/completions", "/v1/chat/completions"} {
		resp, b := post(t, r.URL+path, body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), ErrorPrefix) {
			t.Errorf("%s: status %d %s, want 400 from the scripted model", path, resp.StatusCode, b)
		}
	}
	if resp, b := post(t, r.URL+"/runs/3/v1/chat/completions", body); !strings.Contains(string(b), "no model script for run 3") {
		t.Errorf("status %d body %s does not name run 3", resp.StatusCode, b)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	runs := map[int]int{}
	sc := bufio.NewScanner(strings.NewReader(string(log.Bytes())))
	for sc.Scan() {
		var e LogEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		runs[e.Run]++
	}
	if runs[1] != 1 || runs[2] != 1 || runs[0] != 3 || len(rs.Requests()) != 5 {
		t.Errorf("logged per run %v (requests %d), want run 1: 1, run 2: 1, outside: 3", runs, len(rs.Requests()))
	}
}

// TestFromReference derives one script per reference turn: commands become semantic
// tool calls with the same args, edits shell calls, the presented text the answer.
func TestFromReference(t *testing.T) {
	t.Parallel()
	w, app := "hello-n1\n", "it's\n"
	ref := &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{
		{Trigger: "assignment", Steps: []*catalog.ReferenceStep{
			{Command: "report_progress", Args: map[string]any{"body": "start"}},
			{Command: "finish_task", Args: map[string]any{"summary": "M_n1"}, Present: true},
		}},
		{Trigger: "follow_up", Steps: []*catalog.ReferenceStep{
			{Edit: &catalog.WorkspaceEdit{Path: "d/greeting.txt", Write: &w}},
			{Edit: &catalog.WorkspaceEdit{Path: "d/greeting.txt", Append: &app}},
			{Command: "request_human_input", Args: map[string]any{"payload": map[string]any{"questions": []any{map[string]any{"id": "q"}}}}},
		}},
	}}
	scripts, err := FromReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if len(scripts) != 2 {
		t.Fatalf("%d scripts, want 2", len(scripts))
	}
	s1, s2 := scripts[0].Steps, scripts[1].Steps
	if len(s1) != 3 || s1[0].Call != "report_progress" || s1[1].Call != "finish_task" || s1[1].Args["summary"] != "M_n1" || s1[2].Answer != "M_n1" {
		t.Errorf("turn 1 script = %+v", s1)
	}
	if len(s2) != 4 || s2[0].Call != RoleShell || s2[2].Call != "request_human_input" || s2[3].Answer != DefaultFinalAnswer {
		t.Errorf("turn 2 script = %+v", s2)
	}
	// The derived shell commands really produce the edit (run by /bin/sh here).
	dir := t.TempDir()
	for _, st := range s2[:2] {
		cmd := exec.Command("/bin/sh", "-c", st.Args["command"].(string))
		cmd.Dir, cmd.Env = dir, []string{"PATH=/usr/bin:/bin"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", st.Args["command"], err, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "d", "greeting.txt")); string(b) != w+app {
		t.Errorf("greeting.txt = %q, want %q", b, w+app)
	}
	for _, bad := range []*catalog.WorkspaceEdit{{Path: "/etc/x", Write: &w}, {Path: "a/../../x", Write: &w}, {Path: "x"}} {
		if _, err := ShellCommand(bad); err == nil {
			t.Errorf("ShellCommand(%+v) accepted", bad)
		}
	}
	if _, err := FromReference(nil); err == nil {
		t.Error("FromReference(nil) accepted")
	}
	if n := NopScripts(3); len(n) != 3 || n[2].Steps[0].Answer != NopAnswer {
		t.Errorf("NopScripts(3) = %+v", n)
	}
}

// TestFromReferenceRun: a run step becomes one call of the CLI's shell tool whose
// command, run by a POSIX shell in the workspace, runs exactly that argv (quotes, spaces
// and $ kept literal); an empty command is refused naming the step.
func TestFromReferenceRun(t *testing.T) {
	t.Parallel()
	ref := &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{{Trigger: "assignment", Steps: []*catalog.ReferenceStep{
		{Run: &catalog.WorkspaceRun{Command: []string{"sh", "-c", `printf '%s|%s' "$0" "$1" > out.txt`, "it's $HOME", "a b"}, TimeoutMs: 1000}},
		{Command: "finish_task", Args: map[string]any{"summary": "M"}, Present: true},
	}}}}
	scripts, err := FromReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	s := scripts[0].Steps
	if len(s) != 3 || s[0].Call != RoleShell || s[1].Call != "finish_task" {
		t.Fatalf("script = %+v", s)
	}
	dir := t.TempDir()
	cmd := exec.Command("/bin/sh", "-c", s[0].Args["command"].(string))
	cmd.Dir, cmd.Env = dir, []string{"PATH=/usr/bin:/bin", "HOME=/nowhere"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s", s[0].Args["command"], err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(b) != "it's $HOME|a b" {
		t.Errorf("out.txt = %q, want the arguments literally", b)
	}
	bad := &catalog.ReferenceScript{Turns: []*catalog.ReferenceTurn{{Trigger: "assignment", Steps: []*catalog.ReferenceStep{{Run: &catalog.WorkspaceRun{TimeoutMs: 1}}}}}}
	if _, err := FromReference(bad); err == nil || !strings.Contains(err.Error(), "turn 1 step 1") {
		t.Errorf("an empty run command: %v, want an error naming turn 1 step 1", err)
	}
}
