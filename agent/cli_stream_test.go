package agent_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/internal/fakecli"
	"github.com/agentproof/agentproof/worker"
)

// TestTerminalEvent: each CLI's terminal event, and the lines that look like one but
// are not (another CLI's, an OpenCode tool-calls step, a step without a reason).
func TestTerminalEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cli, line string
		want      bool
	}{
		{"codex", `{"type":"turn.completed","usage":{"input_tokens":1}}`, true},
		{"codex", `{"type":"turn.failed","error":{"message":"x"}}`, true},
		{"codex", `{"type":"turn.started"}`, false},
		{"codex", `{"type":"item.completed","item":{"type":"agent_message","text":"\"turn.completed\""}}`, false},
		{"codex", `{"type":"result"}`, false},
		{"claude", `{"type":"result","subtype":"success","is_error":false,"result":"x"}`, true},
		{"claude", `{"type":"assistant","message":{"content":[{"type":"text","text":"\"result\""}]}}`, false},
		{"opencode", `{"type":"step_finish","part":{"reason":"stop","tokens":{}}}`, true},
		{"opencode", `{"type":"step_finish","part":{"reason":"length"}}`, true},
		{"opencode", `{"type":"step_finish","part":{"reason":"tool-calls"}}`, false},
		{"opencode", `{"type":"step_finish","part":{}}`, false},
		{"opencode", `not json "step_finish"`, false},
		{"pi", `{"type":"result"}`, false},
	}
	for _, tt := range tests {
		if got := agent.TerminalEvent(tt.cli, []byte(tt.line)); got != tt.want {
			t.Errorf("TerminalEvent(%s, %s) = %v, want %v", tt.cli, tt.line, got, tt.want)
		}
	}
}

// TestCLIReportEventStream: a CLI that exits 0 without its terminal event did not
// finish cleanly (failed, EventStreamComplete false); one that was stopped after its
// terminal event is graded on that event (succeeded unless the event is a failure).
func TestCLIReportEventStream(t *testing.T) {
	t.Parallel()
	codexNoEnd := `{"type":"turn.started"}` + "\n" + `{"type":"item.completed","item":{"type":"agent_message","text":"M_1"}}` + "\n"
	codexEnd := codexNoEnd + `{"type":"turn.completed","usage":{"input_tokens":3,"output_tokens":1}}` + "\n"
	codexFailed := codexNoEnd + `{"type":"turn.failed","error":{"message":"boom"}}` + "\n"
	ocNoEnd := `{"type":"step_start","part":{}}` + "\n" + `{"type":"step_finish","part":{"reason":"tool-calls","tokens":{"input":1,"output":1}}}` + "\n"
	claudeNoEnd := `{"type":"assistant","message":{"content":[]}}` + "\n"
	zero := 0
	tests := []struct {
		name, cli, stdout string
		o                 worker.Outcome
		status            string
		complete          bool
		summary           string
	}{
		{"codex exits 0 without turn.completed", "codex", codexNoEnd, worker.Outcome{Started: true, Exited: true, ExitCode: &zero}, "failed", false, "without its terminal event (turn.completed)"},
		{"opencode exits 0 after a tool-calls step", "opencode", ocNoEnd, worker.Outcome{Started: true, Exited: true, ExitCode: &zero}, "failed", false, "without its terminal event (step_finish"},
		{"claude exits 0 without result", "claude", claudeNoEnd, worker.Outcome{Started: true, Exited: true, ExitCode: &zero}, "failed", false, "without its terminal event (result)"},
		{"codex complete", "codex", codexEnd, worker.Outcome{Started: true, Exited: true, ExitCode: &zero}, "succeeded", true, "exited with code 0"},
		{"codex stopped after turn.completed", "codex", codexEnd, worker.Outcome{Started: true, Exited: true, Signal: "SIGKILL", ResultSeen: true, StoppedAfterResult: true, SignalsSent: []string{"SIGTERM", "SIGKILL"}},
			"succeeded", true, "graded on its terminal event (turn.completed)"},
		{"codex stopped after turn.failed", "codex", codexFailed, worker.Outcome{Started: true, Exited: true, Signal: "SIGTERM", ResultSeen: true, StoppedAfterResult: true, SignalsSent: []string{"SIGTERM"}},
			"failed", true, "stopped after its result"},
		{"codex timed out mid-stream", "codex", codexNoEnd, worker.Outcome{Started: true, Exited: true, Signal: "SIGTERM", TimedOut: true, SignalsSent: []string{"SIGTERM"}}, "failed", false, "timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := tt.o
			o.Output = captured(t, tt.stdout, "")
			r := mustNew(t, "exec:"+tt.cli, nil).Report(o)
			if r.RunStatus != tt.status || r.EventStreamComplete == nil || *r.EventStreamComplete != tt.complete || !strings.Contains(r.Summary, tt.summary) {
				t.Errorf("report: status %s, complete %v, summary %q; want %s, %v, containing %q", r.RunStatus, deref(r.EventStreamComplete), r.Summary, tt.status, tt.complete, tt.summary)
			}
		})
	}
	if r := mustNew(t, "nop", nil).Report(worker.Outcome{Started: true}); r.EventStreamComplete != nil {
		t.Error("a driver without an event stream reports EventStreamComplete")
	}
}

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

// TestCLIResultGraceConfig: resultGraceMs is validated (positive, at most
// MaxResultGraceMs, below timeoutMs).
func TestCLIResultGraceConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg map[string]any
		ok  bool
	}{
		{map[string]any{"resultGraceMs": 1500}, true},
		{map[string]any{"resultGraceMs": 0}, false},
		{map[string]any{"resultGraceMs": -3}, false},
		{map[string]any{"resultGraceMs": "5s"}, false},
		{map[string]any{"resultGraceMs": agent.MaxResultGraceMs + 1}, false},
		{map[string]any{"resultGraceMs": 2000, "timeoutMs": 2000}, false},
	} {
		_, err := agent.New("exec:codex", tc.cfg)
		if (err == nil) != tc.ok {
			t.Errorf("%v: error %v, want ok=%v", tc.cfg, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "resultGraceMs") {
			t.Errorf("%v: error %v does not name resultGraceMs", tc.cfg, err)
		}
	}
}

// TestCLIFakeRuns runs fake CLIs (this test binary under a fake's name, launched by the
// real driver and supervised by the real worker): one that exits 0 without its terminal
// event, one that lingers after it (stopped after the grace, not at its timeout, and
// graded on its result) and a complete one.
func TestCLIFakeRuns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fake     string
		status   string
		complete bool
		stopped  bool
	}{
		{fakecli.CodexIncomplete, "failed", false, false},
		{fakecli.CodexLingering, "succeeded", true, true},
		{fakecli.CodexComplete, "succeeded", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.fake, func(t *testing.T) {
			t.Parallel()
			bin, err := fakecli.Link(t.TempDir(), tt.fake)
			if err != nil {
				t.Fatal(err)
			}
			d := mustNew(t, "exec:codex", map[string]any{"binary": bin, "modelBaseUrl": "http://127.0.0.1:9", "timeoutMs": 300_000, "resultGraceMs": 3000})
			spec, err := d.Launch(runContext(), runEnv(t))
			if err != nil {
				t.Fatal(err)
			}
			o, err := worker.Supervise(t.Context(), spec)
			if err != nil {
				t.Fatal(err)
			}
			r := d.Report(o)
			if r.RunStatus != tt.status || deref(r.EventStreamComplete) != tt.complete || o.StoppedAfterResult != tt.stopped || o.TimedOut {
				t.Fatalf("status %s complete %v stopped %v timedOut %v (%s); want %s %v %v", r.RunStatus, deref(r.EventStreamComplete), o.StoppedAfterResult, o.TimedOut, r.Summary, tt.status, tt.complete, tt.stopped)
			}
			if tt.stopped && o.Duration > time.Minute {
				t.Errorf("the lingering CLI ran %v: it was not stopped soon after its result", o.Duration)
			}
		})
	}
}
