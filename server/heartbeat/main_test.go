package heartbeat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/internal/cli"
	"github.com/agentproof/agentproof/internal/fakecli"
	"github.com/agentproof/agentproof/internal/raceexit"
	"github.com/agentproof/agentproof/server"
)

// The test binary doubles as the agentproof binary the runner launches, so every run
// is a real child process:
//
//	<test binary> agent <reference|wrong|nop>   the built-in agents (cli.Main)
//	<test binary> fixture-child <fixture> <ms>  the fixture programs (cli.Main)
//	<test binary> serve --home <dir>            `agentproof serve` (cli.Main)
//	<test binary> print-env                     an exec agent that prints its environment
//	<test binary> edit-home <mode>              an exec agent that edits $AGENT_HOME (homes_test.go)
//	<test binary> exit-3                        an exec agent that exits 3 at once
//	<test binary> complete-native               an exec agent that completes its own run
//	                                            (native run.completed event, then /complete)
//	fake-codex-… (a symlink to the test binary)  a fake agent CLI (package fakecli)
func TestMain(m *testing.M) {
	// As a child process, this binary exits without the race detector's sleep.
	raceexit.Main()
	fakecli.Main() // a fake agent CLI when started under a fake's name
	agent.RegisterDrivers()
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "agent", "fixture-child", "serve":
			os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		case "print-env":
			fmt.Println(strings.Join(os.Environ(), "\n"))
			os.Exit(0)
		case "edit-home":
			os.Exit(editHome(os.Args[2:]))
		case "exit-3":
			os.Exit(3)
		case "complete-native":
			if err := completeNative(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

// completeNative completes the run of this exec agent natively through the agent API
// (agent.EnvAPIURL, agent.EnvRunToken, agent.EnvRunID): its run.completed event, then
// {runId, status: succeeded, summary}.
func completeNative() error {
	base, token, run := os.Getenv(agent.EnvAPIURL), os.Getenv(agent.EnvRunToken), os.Getenv(agent.EnvRunID)
	for _, call := range []struct{ path, body string }{
		{"/events", fmt.Sprintf(`{"eventId":"%s:done","runId":"%s","sequence":1,"type":"run.completed"}`, run, run)},
		{"/complete", fmt.Sprintf(`{"runId":"%s","status":"succeeded","summary":"completed by the agent itself"}`, run)},
	} {
		req, err := http.NewRequest("POST", base+call.path, strings.NewReader(call.body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			return fmt.Errorf("POST %s: %d %s", call.path, resp.StatusCode, b)
		}
	}
	return nil
}

// settle bounds every wait for an observable state: children built with -race are slow,
// and timing is not what these tests measure.
const settle = 3 * time.Minute

// instance is a real server with its heartbeat runner on 127.0.0.1 over a temporary
// home; it can be restarted on the same home.
type instance struct {
	t    testing.TB
	home string
	ro   server.RunnerOptions
	// ephemeral starts the server on an ephemeral home (server.Options.Ephemeral), as
	// an attempt's instance is.
	ephemeral bool
	mu        sync.Mutex
	sv        *server.Serving
}

func startInstance(t testing.TB) *instance {
	t.Helper()
	return startInstanceWith(t, server.RunnerOptions{})
}

// startInstanceWith starts an instance whose runner has ro's bounds (the executable
// is always the test binary).
func startInstanceWith(t testing.TB, ro server.RunnerOptions) *instance {
	t.Helper()
	return startInstanceOn(t, ro, false)
}

// startInstanceOn is startInstanceWith, on an ephemeral home when ephemeral is set.
func startInstanceOn(t testing.TB, ro server.RunnerOptions, ephemeral bool) *instance {
	t.Helper()
	in := &instance{t: t, home: t.TempDir(), ro: ro, ephemeral: ephemeral}
	in.start()
	t.Cleanup(func() {
		in.mu.Lock()
		defer in.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), settle)
		defer cancel()
		if err := in.sv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return in
}

func (in *instance) start() {
	in.t.Helper()
	exe, err := os.Executable()
	if err != nil {
		in.t.Fatal(err)
	}
	ro := in.ro
	ro.Executable = exe
	if ro.PollInterval == 0 {
		ro.PollInterval = 50 * time.Millisecond
	}
	sv, err := server.Serve(context.Background(), server.Options{Home: in.home, Ephemeral: in.ephemeral}, "127.0.0.1:0", ro)
	if err != nil {
		in.t.Fatal(err)
	}
	in.sv = sv
}

// restart shuts the server down and starts it again on the same home.
func (in *instance) restart() {
	in.t.Helper()
	in.mu.Lock()
	defer in.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	if err := in.sv.Shutdown(ctx); err != nil {
		in.t.Fatal(err)
	}
	in.start()
}

func (in *instance) board() *client.Client {
	in.mu.Lock()
	defer in.mu.Unlock()
	return client.New(in.sv.URL, in.sv.BoardToken(), nil)
}

// company creates a started board company.
func (in *instance) company(ctx context.Context) *client.Company {
	in.t.Helper()
	co, err := in.board().CreateCompany(ctx, "Runner E2E", "APF")
	if err != nil {
		in.t.Fatal(err)
	}
	if err := co.Start(ctx); err != nil {
		in.t.Fatal(err)
	}
	return co
}

// handle returns the company on the current server (after a restart too).
func (in *instance) handle(co *client.Company) *client.Company { return in.board().Company(co.ID()) }

func mustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// createAgent creates an agent whose adapterConfig is cfg and returns its id.
func createAgent(ctx context.Context, t testing.TB, co *client.Company, cfg map[string]any) string {
	t.Helper()
	res, err := co.CreateAgent(ctx, api.CreateAgentRequest{Name: "Runner E2E agent", Role: "qa", AdapterConfig: mustJSON(t, cfg)})
	if err != nil {
		t.Fatal(err)
	}
	return res.ID
}

// createIssue creates an issue assigned to actor and returns its id and wake ids.
func createIssue(ctx context.Context, t testing.TB, co *client.Company, title, prompt, workMode, actor string) (string, []string) {
	t.Helper()
	req := api.CreateIssueRequest{Title: title, AssigneeActorID: &actor}
	if prompt != "" {
		req.Description = &prompt
	}
	if workMode != "" {
		req.WorkMode = &workMode
	}
	res, err := co.CreateIssue(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return res.ID, res.ScheduledWakeIDs
}

// builtinConfig is the adapterConfig of a built-in agent playing rendered case r.
func builtinConfig(t testing.TB, driver string, r *catalog.RenderedCase, workspace string) map[string]any {
	t.Helper()
	return map[string]any{
		"driver":       driver,
		"driverConfig": map[string]any{"timeoutMs": settle.Milliseconds()},
		"builtin":      agent.BuiltinConfig{Schema: agent.BuiltinConfigSchema, Nonce: r.Nonce, Reference: r.Reference},
		"cwd":          workspace,
	}
}

// waitFor polls cond until it holds or settle passes.
func waitFor(t testing.TB, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(settle)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitRecord waits until the runner's record of runID satisfies cond.
func waitRecord(t testing.TB, in *instance, runID, what string, cond func(api.HeartbeatRun) bool) api.HeartbeatRun {
	t.Helper()
	var rec api.HeartbeatRun
	waitFor(t, what, func() (bool, error) {
		var err error
		rec, err = in.board().HeartbeatRun(context.Background(), runID)
		if controlplane.CodeOf(err) == "run_missing" {
			return false, nil
		}
		return err == nil && cond(rec), err
	})
	return rec
}

func finished(r api.HeartbeatRun) bool { return r.State == api.RunFinished }

// waitRuns waits until company has n heartbeat runs, every one finished, and returns them.
func waitRuns(t testing.TB, in *instance, co *client.Company, n int) []api.HeartbeatRun {
	t.Helper()
	var runs []api.HeartbeatRun
	waitFor(t, fmt.Sprintf("%d finished runs", n), func() (bool, error) {
		var err error
		runs, err = in.handle(co).HeartbeatRuns(context.Background())
		if err != nil || len(runs) < n {
			return false, err
		}
		for _, r := range runs {
			if r.State != api.RunFinished {
				return false, nil
			}
		}
		return true, nil
	})
	return runs
}

func snapshot(t testing.TB, co *client.Company) controlplane.State {
	t.Helper()
	st, err := co.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// documentedCall sends a board request to pattern (an OpenAPI path, with args
// substituting its parameters) and checks that the answer's status and body are what
// the operation's responses in the server's /openapi.json document; it returns the
// status and body.
func documentedCall(t testing.TB, in *instance, method, pattern string, args map[string]string, body string) (int, []byte) {
	t.Helper()
	return documentedCallKey(t, in, method, pattern, args, body, "")
}

// documentedCallKey is documentedCall with an Idempotency-Key ("" for none).
func documentedCallKey(t testing.TB, in *instance, method, pattern string, args map[string]string, body, key string) (int, []byte) {
	t.Helper()
	send := func(method, path, token, body string) (int, []byte) {
		req, err := http.NewRequest(method, in.sv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
			if key != "" {
				req.Header.Set(api.IdempotencyKeyHeader, key)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, b
	}
	path := pattern
	for k, v := range args {
		path = strings.ReplaceAll(path, "{"+k+"}", url.PathEscape(v))
	}
	status, b := send(method, path, in.sv.BoardToken(), body)
	_, raw := send("GET", "/openapi.json", "", "")
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	const docURL = "https://agentproof.invalid/openapi.json"
	if err := comp.AddResource(docURL, doc); err != nil {
		t.Fatal(err)
	}
	respKey := strconv.Itoa(status)
	if status >= 400 {
		respKey = "default"
	}
	ptr := "#/paths/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(pattern) + "/" + strings.ToLower(method) + "/responses/" + respKey + "/content/application~1json/schema"
	sch, err := comp.Compile(docURL + ptr)
	if err != nil {
		t.Fatalf("%s %s answered %d, which its responses do not document: %v\n%s", method, pattern, status, err, b)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s %s: %v: %s", method, pattern, err, b)
	}
	if err := sch.Validate(v); err != nil {
		t.Fatalf("%s %s answered %d with a body that does not match its schema: %v\n%s", method, pattern, status, err, b)
	}
	return status, b
}
