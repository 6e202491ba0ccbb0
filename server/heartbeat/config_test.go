package heartbeat

import (
	"encoding/json"
	"testing"
)

func TestParseAgentConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		raw     string
		mine    bool
		wantErr bool
	}{
		{"absent", ``, false, false},
		{"null", `null`, false, false},
		{"no driver: not the runner's", `{"model":"x"}`, false, false},
		{"reference", `{"driver":"reference","cwd":"/tmp/ws","lifecycleMode":"per_turn"}`, true, false},
		{"empty driver", `{"driver":""}`, true, true},
		{"relative cwd", `{"driver":"nop","cwd":"ws"}`, true, true},
		{"warm lifecycle", `{"driver":"nop","lifecycleMode":"warm"}`, true, true},
		{"wrong type", `{"driver":"nop","env":[]}`, true, true},
	}
	for _, tc := range tests {
		_, mine, err := parseAgentConfig(json.RawMessage(tc.raw))
		if mine != tc.mine || (err != nil) != tc.wantErr {
			t.Errorf("%s: mine %v err %v; want mine %v err %v", tc.name, mine, err, tc.mine, tc.wantErr)
		}
	}
}

func TestEnvValues(t *testing.T) {
	t.Parallel()
	m := map[string]json.RawMessage{
		"LITERAL": json.RawMessage(`"v"`),
		"KEY":     json.RawMessage(`{"type":"secret_ref","secretId":"secret-1","version":"latest"}`),
	}
	got, err := envValues(m, "env")
	if err != nil || got["LITERAL"].Value != "v" || got["KEY"].Ref == nil || got["KEY"].Ref.SecretID != "secret-1" {
		t.Fatalf("envValues = %+v, %v", got, err)
	}
	for _, bad := range []string{`{"type":"other","secretId":"s","version":"latest"}`, `{"type":"secret_ref","secretId":"s","extra":1}`, `12`} {
		if _, err := envValues(map[string]json.RawMessage{"X": json.RawMessage(bad)}, "env"); err == nil {
			t.Errorf("envValues accepted %s", bad)
		}
	}
}

// FuzzParseAgentConfig: any adapterConfig bytes (board input) decode without a panic,
// and a config the runner accepts has a non-empty driver and an absolute or empty cwd.
func FuzzParseAgentConfig(f *testing.F) {
	for _, s := range []string{`{"driver":"reference","cwd":"/w"}`, `{"driver":""}`, `null`, `{"env":{"A":"b"}}`, `[1]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, mine, err := parseAgentConfig(b)
		if !mine || err != nil {
			return
		}
		if cfg.Driver == "" || (cfg.Cwd != "" && cfg.Cwd[0] != '/') {
			t.Fatalf("accepted %+v", cfg)
		}
		if _, err := envValues(cfg.Env, "env"); err != nil {
			return
		}
	})
}
