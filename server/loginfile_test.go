package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
)

// TestLoginFileSecrets: a login_file secret is stored sealed like any secret, resolves
// only as a login file (never into an agent's environment), and may not appear in agent
// configuration; an unknown kind and an oversized login file are refused.
func TestLoginFileSecrets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newBoardWorld(t)
	const value = `{"access_token":"grok-subscription-login-7f3a9c21e4b8"}`
	ref, err := w.co.CreateSecret(ctx, api.CreateSecretRequest{Name: "grok login", Key: "GROK_AUTH_JSON", Value: value, Kind: api.SecretKindLoginFile})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := w.in.run.ResolveLoginFile(ctx, w.co.ID(), ref); err != nil || got != value {
		t.Fatalf("ResolveLoginFile = %q, %v", got, err)
	}
	if _, err := w.in.run.ResolveSecret(ctx, w.co.ID(), ref); controlplane.CodeOf(err) != "invalid_request" || !strings.Contains(err.Error(), "is a login file") {
		t.Fatalf("ResolveSecret of a login file: %v, want invalid_request naming the login file", err)
	}
	if _, err := w.in.run.ResolveLoginFile(ctx, w.co.ID(), w.ref); controlplane.CodeOf(err) != "invalid_request" {
		t.Fatalf("ResolveLoginFile of an env secret: %v, want invalid_request", err)
	}
	cfg, _ := json.Marshal(map[string]any{"name": "a", "role": "r", "adapterConfig": map[string]any{"env": map[string]any{"GROK_AUTH_JSON": ref}}})
	status, code, body := call(t, w.base, "POST", "/api/companies/"+w.co.ID()+"/agents", w.boardTk, cfg)
	if status != 400 || code != "secret_ref_required" || !strings.Contains(string(body), "is a login file") {
		t.Fatalf("agent configuration naming a login file: %d %s %s", status, code, body)
	}
	for name, req := range map[string]string{
		"unknown kind": `{"name":"n","key":"K","value":"v","kind":"keychain"}`,
		"too large":    `{"name":"n","key":"K","kind":"login_file","value":"` + strings.Repeat("a", api.MaxLoginFileBytes+1) + `"}`,
	} {
		status, code, _ := call(t, w.base, "POST", "/api/companies/"+w.co.ID()+"/secrets", w.boardTk, []byte(req))
		if status != 400 || code != "invalid_request" {
			t.Errorf("%s: %d %s, want 400 invalid_request", name, status, code)
		}
	}
}
