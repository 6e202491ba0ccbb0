package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/reference"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/controlplane"
)

// builtinConfig renders the default catalog's message-marker case for the reference
// profile and returns its BuiltinConfig JSON and the rendered case.
func builtinConfigB(b *testing.B) ([]byte, *catalog.RenderedCase) { return builtinConfig(b, "bench") }

func builtinConfig(t testing.TB, nonce string) ([]byte, *catalog.RenderedCase) {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	cell := cat.Cell("grader-calibration.reference.local.message-marker")
	if cell == nil {
		t.Fatal("no message-marker cell")
	}
	r, err := cell.Render(nonce)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(agent.BuiltinConfig{Schema: agent.BuiltinConfigSchema, Nonce: nonce, Reference: r.Reference})
	if err != nil {
		t.Fatal(err)
	}
	return b, r
}

func openMemory(t *testing.T) *controlplane.Memory {
	t.Helper()
	m, err := controlplane.NewMemory(controlplane.Seed{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.OpenRun(ctx, controlplane.OpenInput{
		Identity:    controlplane.Identity{RunID: "run-1", SessionID: "s", CompanyID: "company-1", IssueID: "task-1", AgentID: "actor-1"},
		BackendKind: "runner", Wake: &controlplane.Wake{Reason: "issue_assigned", Payload: json.RawMessage(`{}`)},
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRunBuiltin runs the body of `agentproof agent reference|wrong` from an explicit
// environment as the driver builds it, against an in-process control plane.
func TestRunBuiltin(t *testing.T) {
	t.Parallel()
	const nonce = "n0nce7"
	cfg, r := builtinConfig(t, nonce)
	for _, name := range []string{"reference", "wrong"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := openMemory(t)
			env := runEnv(t)
			env.AdapterConfig = cfg
			spec, err := mustNew(t, name, nil).Launch(runContext(), env)
			if err != nil {
				t.Fatal(err)
			}
			var gotURL, gotToken string
			dial := func(_ context.Context, url, token string) (controlplane.Port, error) {
				gotURL, gotToken = url, token
				return m, nil
			}
			out, err := agent.RunBuiltin(context.Background(), driver.MustParse(name), spec.Env, dial)
			if err != nil {
				t.Fatal(err)
			}
			if gotURL != env.APIURL || gotToken != env.RunToken || out.Turn != 1 || out.Disposition != "done" {
				t.Fatalf("dialled %s/%s, outcome %+v", gotURL, gotToken, out)
			}
			st, _ := m.Snapshot(context.Background())
			last := st.Comments[len(st.Comments)-1].Body
			want := r.Marker
			if name == "wrong" {
				want = strings.ReplaceAll(r.Marker, nonce, reference.WrongNonce(nonce))
			}
			if last != want {
				t.Fatalf("final message %q, want %q", last, want)
			}
		})
	}
}

func TestRunBuiltinErrors(t *testing.T) {
	t.Parallel()
	noDial := func(context.Context, string, string) (controlplane.Port, error) {
		t.Error("dialled")
		return nil, errors.New("no")
	}
	ctx := context.Background()
	if _, err := agent.RunBuiltin(ctx, driver.MustParse("nop"), nil, noDial); err != nil {
		t.Errorf("nop: %v", err)
	}
	var ue *agent.UsageError
	if _, err := agent.ParseBuiltin("oracle"); !errors.As(err, &ue) {
		t.Errorf("unknown agent: %v", err)
	}
	if _, err := agent.ParseBuiltin("exec"); !errors.As(err, &ue) {
		t.Errorf("a driver that is no built-in agent: %v", err)
	}
	if _, err := agent.RunBuiltin(ctx, driver.MustParse("exec:codex"), nil, noDial); !errors.As(err, &ue) {
		t.Errorf("a driver that is no built-in agent ran: %v", err)
	}
	if n, err := agent.ParseBuiltin("hostile:connect"); err != nil || n != driver.MustParse("hostile:connect") {
		t.Errorf("hostile:connect: %v, %v", n, err)
	}
	_, err := agent.RunBuiltin(ctx, driver.MustParse("reference"), []string{"AGENTPROOF_RUN_ID=run-1"}, noDial)
	if !errors.As(err, &ue) || len(ue.Problems) != 5 {
		t.Errorf("missing variables: %v", err)
	}
	env := []string{"AGENTPROOF_API_URL=http://x", "AGENTPROOF_RUN_TOKEN=t", "AGENTPROOF_RUN_ID=r", "AGENTPROOF_WORKSPACE=/w", "AGENTPROOF_AGENT_STATE_DIR=/s", `AGENTPROOF_AGENT_CONFIG={"schema":"nope"}`}
	if _, err := agent.RunBuiltin(ctx, driver.MustParse("wrong"), env, noDial); !errors.As(err, &ue) {
		t.Errorf("bad config: %v", err)
	}
	cfg, _ := builtinConfig(t, "abc")
	env[len(env)-1] = "AGENTPROOF_AGENT_CONFIG=" + string(cfg)
	failDial := func(context.Context, string, string) (controlplane.Port, error) { return nil, errors.New("refused") }
	if _, err := agent.RunBuiltin(ctx, driver.MustParse("reference"), env, failDial); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("dial error: %v", err)
	}
}

func TestParseBuiltinConfig(t *testing.T) {
	t.Parallel()
	good, _ := builtinConfig(t, "abc")
	if _, err := agent.ParseBuiltinConfig(good); err != nil {
		t.Fatalf("good config: %v", err)
	}
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"not json", `{`, []string{"unexpected EOF"}},
		{"trailing", `{"schema":"agentproof.builtin-agent-config/v1","nonce":"a","reference":{"turns":[{"trigger":"assignment","steps":[]}]}} {}`, []string{"trailing"}},
		{"unknown field", `{"schema":"agentproof.builtin-agent-config/v1","extra":1}`, []string{`unknown field "extra"`}},
		{"everything wrong", `{"schema":"v0","nonce":"bad nonce!","reference":{"turns":[null,{"trigger":"whenever","steps":[{},{"command":"finish_task","edit":{"path":"x","delete":true}}]}]}}`,
			[]string{`schema "v0"`, `nonce "bad nonce!"`, "turns[0] is empty", `trigger "whenever"`, "turns[1].steps[0]", "turns[1].steps[1]"}},
		{"no script", `{"schema":"agentproof.builtin-agent-config/v1","nonce":"a"}`, []string{"at least one turn"}},
		{"too large", `{"schema":"` + strings.Repeat("x", agent.MaxBuiltinConfigBytes) + `"}`, []string{"the limit is"}},
		{"hostile targets", `{"schema":"agentproof.builtin-agent-config/v1","nonce":"a","reference":{"turns":[{"trigger":"assignment","steps":[]}]},"hostile":{"controllerPid":-1,"tripwire":"10.0.0.1:80","outside":"rel/dir"}}`,
			[]string{"controllerPid -1", `tripwire "10.0.0.1:80"`, `outside "rel/dir"`}},
	}
	goodHostile := `{"schema":"agentproof.builtin-agent-config/v1","nonce":"a","reference":{"turns":[{"trigger":"assignment","steps":[]}]},"hostile":{"controllerPid":42,"tripwire":"127.0.0.1:9","outside":"/tmp/x/outside"}}`
	if c, err := agent.ParseBuiltinConfig([]byte(goodHostile)); err != nil || c.Hostile == nil || c.Hostile.ControllerPID != 42 {
		t.Errorf("good hostile targets: %+v, %v", c, err)
	}
	for _, tc := range tests {
		_, err := agent.ParseBuiltinConfig([]byte(tc.doc))
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", tc.name, err, w)
			}
		}
	}
}

// FuzzParseBuiltinConfig: the parser never panics, and what it accepts re-encodes to a
// configuration it accepts again with the same content.
func FuzzParseBuiltinConfig(f *testing.F) {
	f.Add([]byte(`{"schema":"agentproof.builtin-agent-config/v1","nonce":"abc","reference":{"turns":[{"trigger":"assignment","steps":[{"command":"finish_task","args":{"summary":"M_abc"},"present":true}]}]}}`))
	f.Add([]byte(`{"schema":"agentproof.builtin-agent-config/v1","nonce":"n","reference":{"turns":[{"trigger":"follow_up","steps":[{"edit":{"path":"a/b","append":"x"}}]}]}}`))
	f.Add([]byte(`{"reference":{"turns":[null]}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := agent.ParseBuiltinConfig(b)
		if err != nil {
			return
		}
		again, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := agent.ParseBuiltinConfig(again)
		if err != nil {
			t.Fatalf("re-encoded configuration rejected: %v\n%s", err, again)
		}
		third, _ := json.Marshal(c2)
		if string(third) != string(again) {
			t.Fatalf("round trip changed the configuration:\n%s\n%s", again, third)
		}
	})
}
