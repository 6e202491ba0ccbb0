package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/clis"
	"github.com/agentproof/agentproof/agent/scriptedmodel"
	"github.com/agentproof/agentproof/worker"
)

// The optional CLIs (docs/clis.md) offline against the scripted model, each through its
// exec driver exactly as the heartbeat runner launches it: the native binary (or node
// and the entry script), the MCP server `<test binary> mcp` (the stub semantic tools)
// in the CLI's own configuration, the scripted model as its provider. Skipped when the
// CLI is not installed (they are optional, also in CI).

// moreCLI is one optional CLI: whether its stream reports token usage.
type moreCLI struct {
	name  string
	usage bool
}

var moreCLIs = []moreCLI{{"kilo", true}, {"qwen", true}, {"copilot", false}}

// optionalCLIConfig locates an optional CLI (skipping when it is not installed) and
// returns its driverConfig (binary, node for a JavaScript entry script).
func optionalCLIConfig(t *testing.T, name string) map[string]any {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: %s is a real agent CLI (seconds of CPU per run); the full test command runs it", name)
	}
	c, ok := clis.Lookup(name)
	if !ok {
		t.Fatalf("no pinned CLI %s", name)
	}
	dir := os.Getenv("AGENTPROOF_AGENTS_DIR")
	if dir == "" {
		dir, _ = clis.DefaultDir()
	}
	in, err := clis.Locate(dir, c, clis.HostPlatform())
	var ni *clis.NotInstalledError
	switch {
	case errors.As(err, &ni):
		t.Skipf("%s is optional and not installed in %s (agentproof agents install --dir %s %s)", name, dir, dir, name)
	case err != nil:
		t.Fatalf("locating %s: %v", name, err)
	}
	cfg := map[string]any{"binary": in.Binary, "timeoutMs": 480000} // alone 5–20 s; minutes at load average 70
	if in.Runtime == clis.RuntimeNode {
		node, err := clis.Node(context.Background(), []string{"PATH=/usr/local/bin:/usr/bin:/bin"})
		if err != nil {
			t.Fatal(err)
		}
		cfg["node"] = node
	}
	return cfg
}

const moreCLIScript = `steps:
  - call: shell
    args: {command: "printf hi-{{nonce}} > {{ws}}/hello.txt"}
  - call: finish_task
    args: {summary: "done {{nonce}}"}
  - answer: "DONE_{{nonce}}"
`

// TestMoreCLIsOffline: each optional CLI writes the file with its shell tool, calls
// finish_task through the agentproof MCP server as the run (run id and token from the
// environment the runner gave it, never from a file), answers, and exits: the run
// succeeds on a complete event stream; usage is read where the stream reports it and
// absent (unavailable, not zero) where it does not.
func TestMoreCLIsOffline(t *testing.T) {
	t.Parallel()
	for _, mc := range moreCLIs {
		t.Run(mc.name, func(t *testing.T) {
			t.Parallel()
			cfg := optionalCLIConfig(t, mc.name)
			env := runEnv(t)
			env.Secrets = nil
			rs, url := scriptedModel(t, mc.name, moreCLIScript, map[string]string{"nonce": "n" + mc.name, "ws": env.Workspace})
			cfg["modelBaseUrl"] = url
			d := mustNew(t, "exec:"+mc.name, cfg)
			spec, err := d.Launch(runContext(), env)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range spec.Args {
				if strings.Contains(a, env.RunToken) {
					t.Errorf("argv carries the run token: %q", a)
				}
			}
			start := time.Now()
			o, err := worker.Supervise(t.Context(), spec)
			if err != nil {
				t.Fatal(err)
			}
			elapsed := time.Since(start)
			r := d.Report(o)
			var failures []string
			for _, e := range rs.Requests() {
				if e.Status != 200 {
					failures = append(failures, e.Error)
				}
			}
			if r.RunStatus != "succeeded" || r.EventStreamComplete == nil || !*r.EventStreamComplete {
				t.Fatalf("%s: status %s, complete %v: %s (model refusals: %v)\nstdout: %s", mc.name, r.RunStatus, r.EventStreamComplete, r.Summary, failures, clipOut(o.Output.Stdout()))
			}
			if b, err := os.ReadFile(filepath.Join(env.Workspace, "hello.txt")); err != nil || string(b) != "hi-n"+mc.name {
				t.Errorf("hello.txt = %q, %v", b, err)
			}
			calls := readMCPCalls(env.StateDir)
			if len(calls) != 1 || calls[0].Tool != "finish_task" || calls[0].RunID != env.RunID || !calls[0].TokenSet || calls[0].Args["summary"] != "done n"+mc.name {
				t.Errorf("MCP calls = %+v, want finish_task as run-1", calls)
			}
			ev := agent.ParseEvents(mc.name, o.Output.Stdout())
			if ev.FinalText != "DONE_n"+mc.name {
				t.Errorf("final text %q", ev.FinalText)
			}
			if (r.Usage != nil) != mc.usage {
				t.Errorf("usage %s, want reported = %v", r.Usage, mc.usage)
			}
			for _, f := range []string{"events.jsonl", "stderr.log"} {
				for _, e := range r.Transcript {
					if e.Name == f && strings.Contains(string(e.Body), env.RunToken) {
						t.Errorf("%s holds the run token", f)
					}
				}
			}
			t.Logf("%s: %v, %d model requests", mc.name, elapsed.Round(time.Millisecond), len(rs.Requests()))
		})
	}
}

// scriptedModel serves one run of the script src (YAML, rendered with vars) on a
// loopback port until the test ends, and returns its run set and base URL.
func scriptedModel(t *testing.T, name, src string, vars map[string]string) (*scriptedmodel.RunSet, string) {
	t.Helper()
	sc, err := scriptedmodel.ParseScript(name, []byte(src), vars)
	if err != nil {
		t.Fatal(err)
	}
	rs, running := serveScripts(t, []*scriptedmodel.Script{sc})
	return rs, running.URL
}

// serveScripts serves scripts (one per run) on a loopback port until the test ends.
func serveScripts(tb testing.TB, scripts []*scriptedmodel.Script) (*scriptedmodel.RunSet, *scriptedmodel.Running) {
	tb.Helper()
	rs, err := scriptedmodel.NewRunSet(scripts, scriptedmodel.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	running, err := rs.Listen("127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = running.Close(context.Background()) })
	return rs, running
}

func clipOut(b []byte) string {
	if len(b) > 3000 {
		return string(b[:1500]) + " … " + string(b[len(b)-1500:])
	}
	return string(b)
}
