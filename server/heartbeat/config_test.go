package heartbeat

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestEnvValues: an environment's envVars hold strings and secret references; every
// other value is refused, named by its variable. (The adapterConfig's own decoding is
// api.ParseAdapterConfig, tested in package api.)
func TestEnvValues(t *testing.T) {
	t.Parallel()
	m := map[string]json.RawMessage{
		"LITERAL": json.RawMessage(`"v"`),
		"KEY":     json.RawMessage(`{"type":"secret_ref","secretId":"secret-1","version":"latest"}`),
	}
	got, err := envValues(m, "envVars")
	if err != nil || got["LITERAL"].Value != "v" || got["KEY"].Ref == nil || got["KEY"].Ref.SecretID != "secret-1" {
		t.Fatalf("envValues = %+v, %v", got, err)
	}
	for _, bad := range []string{`{"type":"other","secretId":"s","version":"latest"}`, `{"type":"secret_ref","secretId":"s","extra":1}`, `12`} {
		if _, err := envValues(map[string]json.RawMessage{"X": json.RawMessage(bad)}, "envVars"); err == nil || !strings.Contains(err.Error(), "envVars.X") {
			t.Errorf("envValues accepted %s or did not name it: %v", bad, err)
		}
	}
}

// TestParseAgentConfigIsStrict: the runner reads the adapterConfig through the strict
// api decoder: an unknown key is a configuration error naming the key, and a
// configuration without a driver is not the runner's.
func TestParseAgentConfigIsStrict(t *testing.T) {
	t.Parallel()
	if _, mine, err := parseAgentConfig(json.RawMessage(`{"driver":"nop","drivrConfig":{}}`)); !mine || err == nil || !strings.Contains(err.Error(), `unknown key "drivrConfig"`) {
		t.Fatalf("unknown key: mine %v, %v", mine, err)
	}
	if _, mine, err := parseAgentConfig(json.RawMessage(`{"model":"x"}`)); mine || err != nil {
		t.Fatalf("no driver: mine %v, %v", mine, err)
	}
}
