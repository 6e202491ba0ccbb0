package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/server"
)

// FuzzRequestDecoders sends arbitrary bodies to every route that decodes one: the
// server answers 2xx or a JSON {code, message, retryable} with a 4xx status, never a
// 5xx, and never panics.
func FuzzRequestDecoders(f *testing.F) {
	for _, s := range []string{
		`{"title":"t"}`, `{"name":"a","role":"r","adapterConfig":{"env":{"K":{"type":"secret_ref","secretId":"s","version":"latest"}}}}`,
		`{"runId":"run-1","idempotencyKey":"k","command":{"kind":"report_progress","body":"b"}}`, `{"runId":"run-1","idempotencyKey":"k","commandText":"{"}`,
		`{"state":{"schema":"paperclip.capability.mock-state.v1"}}`, `{"name":"x","issuePrefix":"X"}`, `{"outcome":"accepted"}`,
		`{"body":"b"}`, `{"decision":"approved","note":"n"}`, `{"name":"n","key":"k","value":"v"}`, `null`, `[]`, `{"a":1}{`, "\x00",
	} {
		for i := range 12 {
			f.Add(uint8(i), []byte(s))
		}
	}
	ctx := context.Background()
	s, err := server.Open(ctx, server.Options{Home: f.TempDir(), Ephemeral: true}) // no fsync per write: the decoders are what is fuzzed
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	h := s.Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, authed(s, "POST", "/api/companies", []byte(`{"name":"Fuzz","issuePrefix":"FZ"}`)))
	var co api.Company
	if err := json.Unmarshal(rec.Body.Bytes(), &co); err != nil || co.ID == "" {
		f.Fatalf("creating the company: %s", rec.Body.String())
	}
	p := "/api/companies/" + co.ID
	routes := []struct{ method, path string }{
		{"POST", "/api/companies"}, {"POST", p + "/secrets"}, {"POST", p + "/agents"}, {"POST", p + "/projects"},
		{"POST", p + "/environments"}, {"POST", p + "/issues"}, {"POST", p + "/issues/fixture-task-0001/comments"},
		{"POST", p + "/interactions/i-1/resolve"}, {"POST", p + "/approvals/a-1/decide"}, {"POST", p + "/runs"},
		{"POST", p + "/commands"}, {"POST", p + "/events"},
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		rt := routes[int(which)%len(routes)]
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, authed(s, rt.method, rt.path, body))
		if rec.Code >= 500 {
			t.Fatalf("%s %s with %q: status %d %s", rt.method, rt.path, body, rec.Code, rec.Body.String())
		}
		if rec.Code >= 400 {
			var e api.Error
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Code == "" {
				t.Fatalf("%s %s: error body %q is not {code, message, retryable}", rt.method, rt.path, rec.Body.String())
			}
		}
	})
}

func authed(s *server.Server, method, path string, body []byte) *http.Request {
	r := httptest.NewRequest(method, path, bytes.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+s.BoardToken())
	return r
}
