package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/mcp"
	"github.com/agentproof/agentproof/server"
)

// world is a real control-plane server on 127.0.0.1 with a fixture company (the
// control plane's default seed: company-1, actor-1, task-1) whose run-1 is open, and an MCP client session
// connected (in memory) to this package's server for run-1, which reaches the control
// plane over HTTP with run-1's agent token.
type world struct {
	srv      *server.Running
	co       *client.Company
	token    string
	apiURL   string
	stateDir string
	session  *sdk.ClientSession
}

func newWorld(t testing.TB, seed controlplane.Seed, capabilities ...string) *world {
	t.Helper()
	ctx := context.Background()
	r, err := server.Start(ctx, server.Options{Home: t.TempDir()}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r.Shutdown(ctx)
	})
	board := client.New(r.URL, r.BoardToken(), nil)
	co, err := board.CreateFixtureCompany(ctx, seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := co.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := co.OpenFixtureRun(ctx, controlplane.OpenInput{BackendKind: "mock", Capabilities: capabilities, Identity: controlplane.Identity{
		RunID: "run-1", SessionID: "s-1", CompanyID: "company-1", IssueID: "task-1", AgentID: "actor-1"}}); err != nil {
		t.Fatal(err)
	}
	w := &world{srv: r, co: co, token: r.MintAgentToken(co.ID(), "actor-1", "run-1"), apiURL: r.URL + "/api/companies/" + co.ID(), stateDir: t.TempDir()}
	a, err := mcp.Dial(ctx, w.apiURL, w.token)
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcp.NewServer(mcp.Config{RunID: "run-1", RunToken: w.token, StateDir: w.stateDir}, a)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	w.session = cs
	return w
}

// call calls tool with args and returns the result's text and isError.
func (w *world) call(t *testing.T, tool string, args any) (string, bool) {
	t.Helper()
	res, err := w.session.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", tool, err)
	}
	var texts []string
	for _, c := range res.Content {
		tc, ok := c.(*sdk.TextContent)
		if !ok {
			t.Fatalf("%s: content %T, want text", tool, c)
		}
		texts = append(texts, tc.Text)
	}
	return strings.Join(texts, "\n"), res.IsError
}

// ok calls tool, fails the test on a tool error and decodes the JSON text into out.
func (w *world) ok(t *testing.T, tool string, args any, out any) {
	t.Helper()
	text, isErr := w.call(t, tool, args)
	if isErr {
		t.Fatalf("%s(%v): tool error %s", tool, args, text)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(text), out); err != nil {
			t.Fatalf("%s: result %q: %v", tool, text, err)
		}
	}
}

func (w *world) snapshot(t *testing.T) controlplane.State {
	t.Helper()
	st, err := w.co.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func taskByID(st controlplane.State, id string) *controlplane.Task {
	for _, tk := range st.Tasks {
		if tk.ID == id {
			return tk
		}
	}
	return nil
}
