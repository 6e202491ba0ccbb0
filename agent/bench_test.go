package agent_test

import (
	"context"
	"testing"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/worker"
)

// BenchmarkLaunchAndSupervise measures one agent process end to end through a driver:
// Launch (spec building) plus worker.Supervise of a program that exits at once (the test
// binary's report mode, standing in for `agentproof agent nop`).
func BenchmarkLaunchAndSupervise(b *testing.B) {
	d, err := build("exec", map[string]any{"command": selfB(b), "args": []any{"report"}, "timeoutMs": 20000})
	if err != nil {
		b.Fatal(err)
	}
	env := agent.RunEnv{Executable: selfB(b), Workspace: b.TempDir(), APIURL: "http://127.0.0.1:1", RunID: "run-1", RunToken: "t", StateDir: b.TempDir()}
	rc := runContext()
	for b.Loop() {
		spec, err := d.Launch(rc, env)
		if err != nil {
			b.Fatal(err)
		}
		o, err := worker.Supervise(context.Background(), spec)
		if err != nil || o.ExitCode == nil || *o.ExitCode != 0 {
			b.Fatalf("%v %s", err, agent.Summarize(o))
		}
	}
}

// BenchmarkLaunchSpec measures building one launch spec (the driver's share of the
// runner's wake-to-process-start latency).
func BenchmarkLaunchSpec(b *testing.B) {
	d, err := build("reference", nil)
	if err != nil {
		b.Fatal(err)
	}
	env := agent.RunEnv{Executable: selfB(b), Workspace: b.TempDir(), APIURL: "http://127.0.0.1:1", RunID: "run-1", RunToken: "t", StateDir: b.TempDir(),
		Secrets: map[string]string{"OPENAI_API_KEY": "x"}}
	env.AdapterConfig, _ = builtinConfigB(b)
	rc := runContext()
	for b.Loop() {
		if _, err := d.Launch(rc, env); err != nil {
			b.Fatal(err)
		}
	}
}
