package api_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/api"
)

// campaignConfigs are adapter configurations in the exact shape the campaign executor
// sends today (campaign/local.go adapterConfig): they must decode and re-encode to the
// same JSON.
var campaignConfigs = []string{
	`{"cwd":"/tmp/ws","driver":"fixture:hang","driverConfig":{"maxOutputBytes":65536,"timeoutMs":2000},"env":{"APF_CANARY":{"type":"secret_ref","secretId":"secret-1","version":"latest"}},"environmentId":"env-1","lifecycleMode":"per_turn"}`,
	`{"builtin":{"nonce":"n1","reference":{"turns":[]},"schema":"agentproof.builtin-agent-config/v1"},"cwd":"/tmp/ws","driver":"wrong","env":{},"environmentId":"env-1","lifecycleMode":"per_turn"}`,
	`{"cwd":"/tmp/ws","driver":"exec:codex","driverConfig":{"binary":"/cache/codex","modelBaseUrl":"http://127.0.0.1:4000","timeoutMs":300000},"env":{"OPENAI_API_KEY":{"type":"secret_ref","secretId":"s2","version":"latest"}},"environmentId":"env-1","lifecycleMode":"per_turn"}`,
	`{"cwd":"/tmp/ws","driver":"exec:opencode","driverConfig":{"binary":"/cache/opencode","live":{"baseUrl":"https://api.openai.com/v1","envVar":"OPENAI_API_KEY","model":"gpt-5.2","npm":"@ai-sdk/openai"},"timeoutMs":300000},"environmentId":"env-1","lifecycleMode":"per_turn"}`,
	`{"driver":"exec","driverConfig":{"args":["run","{{workspace}}"],"command":"/bin/agent","env":{"TOKEN":{"type":"secret_ref","secretId":"s3","version":"latest"},"MODE":"fast"}}}`,
}

func TestParseAdapterConfigCampaignShape(t *testing.T) {
	t.Parallel()
	for _, raw := range campaignConfigs {
		cfg, ok, err := api.ParseAdapterConfig(json.RawMessage(raw))
		if !ok || err != nil {
			t.Fatalf("%s: ok %v, %v", raw, ok, err)
		}
		again, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		_ = json.Unmarshal([]byte(raw), &a)
		_ = json.Unmarshal(again, &b)
		if e, ok := a.(map[string]any)["env"].(map[string]any); ok && len(e) == 0 {
			delete(a.(map[string]any), "env") // an empty env is omitted
		}

		if !reflect.DeepEqual(a, b) {
			t.Errorf("round trip changed the configuration:\n in  %s\n out %s", raw, again)
		}
	}
	cfg, _, _ := api.ParseAdapterConfig(json.RawMessage(campaignConfigs[2]))
	if cli, ok := cfg.Driver.CLI(); !ok || cli != "codex" || cfg.DriverConfig.Binary != "/cache/codex" || *cfg.DriverConfig.TimeoutMs != 300000 ||
		cfg.Env["OPENAI_API_KEY"].Ref == nil || cfg.Env["OPENAI_API_KEY"].Ref.SecretID != "s2" {
		t.Errorf("decoded %+v", cfg)
	}
}

func TestParseAdapterConfigRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw string
		mine      bool
		want      []string // substrings of the error; nil: no error
	}{
		{"absent", ``, false, nil},
		{"null", `null`, false, nil},
		{"array", `[1]`, false, nil},
		{"no driver: not the runner's", `{"model":"x"}`, false, nil},
		{"minimal", `{"driver":"nop"}`, true, nil},
		{"empty driver", `{"driver":""}`, true, []string{"driver must not be empty"}},
		{"unknown driver", `{"driver":"exec:aider"}`, true, []string{`unknown driver "exec:aider"`, "exec:codex"}},
		{"unknown key", `{"driver":"nop","model":"x","zeta":1}`, true, []string{`unknown key "model"`, `unknown key "zeta"`, "lifecycleMode"}},
		{"unknown driverConfig key", `{"driver":"reference","driverConfig":{"timeoutMs":5,"tiemoutMs":5}}`, true, []string{`driverConfig: unknown key "tiemoutMs"`}},
		{"unknown live key", `{"driver":"exec:codex","driverConfig":{"live":{"baseUrl":"https://x","model":"m","envVar":"K","apiKey":"x"}}}`, true, []string{`live: unknown key "apiKey"`}},
		{"wrong type", `{"driver":"nop","driverConfig":{"timeoutMs":"soon"}}`, true, []string{"timeoutMs: a JSON string cannot be a int64"}},
		{"env not an object", `{"driver":"nop","env":[]}`, true, []string{"env:"}},
		{"env value", `{"driver":"nop","env":{"A":12}}`, true, []string{"secret reference"}},
		{"env ref extra key", `{"driver":"nop","env":{"A":{"type":"secret_ref","secretId":"s","extra":1}}}`, true, []string{"secret reference"}},
		{"env ref wrong type", `{"driver":"nop","env":{"A":{"type":"other","secretId":"s"}}}`, true, []string{"secret reference"}},
		{"relative cwd", `{"driver":"nop","cwd":"ws"}`, true, []string{`cwd "ws" must be an absolute path`}},
		{"warm lifecycle without sessions", `{"driver":"nop","lifecycleMode":"warm"}`, true, []string{`lifecycleMode "warm" needs a session driver`}},
		{"warm ACP lifecycle", `{"driver":"acp:reference","lifecycleMode":"warm"}`, true, nil},
		{"warm Pi lifecycle", `{"driver":"rpc:pi","lifecycleMode":"warm"}`, true, nil},
		{"warm exec lifecycle", `{"driver":"exec:codex","lifecycleMode":"warm"}`, true, []string{`lifecycleMode "warm" needs a session driver (acp:<agent>, rpc:<agent> or app:<agent>)`}},
		{"unknown lifecycle", `{"driver":"acp:reference","lifecycleMode":"tepid"}`, true, []string{`lifecycleMode "tepid" is not supported`}},
		{"all at once", `{"driver":"x","cwd":"ws","extra":true}`, true, []string{`unknown driver "x"`, "cwd", `unknown key "extra"`}},
	}
	for _, tc := range tests {
		_, mine, err := api.ParseAdapterConfig(json.RawMessage(tc.raw))
		if mine != tc.mine || (err != nil) != (tc.want != nil) {
			t.Errorf("%s: mine %v err %v; want mine %v, error %v", tc.name, mine, err, tc.mine, tc.want)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, w)
			}
		}
	}
}

func TestDriverConfigOf(t *testing.T) {
	t.Parallel()
	c, err := api.DriverConfigOf(map[string]any{"timeoutMs": 300000, "live": map[string]any{"baseUrl": "https://x", "model": "m", "envVar": "K"}, "script": "nop"})
	if err != nil || *c.TimeoutMs != 300000 || c.Live == nil || c.Live.Credential != "K" || c.Script != "nop" {
		t.Fatalf("DriverConfigOf = %+v, %v", c, err)
	}
	if _, err := api.DriverConfigOf(map[string]any{"binray": "/x"}); err == nil || !strings.Contains(err.Error(), `unknown key "binray"`) {
		t.Fatalf("unknown key: %v", err)
	}
	if c, err := api.DriverConfigOf(nil); err != nil || !reflect.DeepEqual(c, api.DriverConfig{}) {
		t.Fatalf("nil: %+v, %v", c, err)
	}
}

// FuzzParseAdapterConfig: any adapterConfig bytes (board input) decode without a
// panic; a configuration accepted as the runner's has a driver, an absolute or empty
// cwd, and re-encodes to a configuration that decodes to the same value.
func FuzzParseAdapterConfig(f *testing.F) {
	for _, s := range append(campaignConfigs, `{"driver":""}`, `null`, `{"env":{"A":"b"}}`, `[1]`, `{"driver":"nop","driverConfig":null}`) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, mine, err := api.ParseAdapterConfig(b)
		if !mine || err != nil {
			return
		}
		if cfg.Driver == (driver.Name{}) || (cfg.Cwd != "" && cfg.Cwd[0] != '/') {
			t.Fatalf("accepted %+v", cfg)
		}
		again, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg2, mine, err := api.ParseAdapterConfig(again)
		if !mine || err != nil || !reflect.DeepEqual(normal(cfg), normal(cfg2)) {
			t.Fatalf("%s re-encoded as %s: %+v, %v", b, again, cfg2, err)
		}
	})
}

// normal drops the differences encoding cannot keep: empty maps and lists are absent.
func normal(c api.AdapterConfig) api.AdapterConfig {
	if len(c.Env) == 0 {
		c.Env = nil
	}
	if len(c.Builtin) == 0 {
		c.Builtin = nil
	}
	if d := c.DriverConfig; d != nil {
		cp := *d
		if len(cp.Env) == 0 {
			cp.Env = nil
		}
		if len(cp.Args) == 0 {
			cp.Args = nil
		}
		c.DriverConfig = &cp
	}
	return c
}
