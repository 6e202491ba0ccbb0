package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// TestRunExportsTraces: `run --otlp-endpoint` sends every attempt of the campaign to
// a local OTLP/HTTP receiver as a trace (an attempt span per cell, invoke_agent spans
// for its runs); without the flag nothing is sent.
func TestRunExportsTraces(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var names []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req collector.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || protojson.Unmarshal(b, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names = append(names, s.Name)
				}
			}
		}
		mu.Unlock()
	}))
	defer srv.Close()
	results := t.TempDir()
	var out, errb strings.Builder
	code := Main([]string{"run", "--suite", "calibration", "--results", results, "--campaign", "otlp-1", "--progress", "none", "--otlp-endpoint", srv.URL},
		strings.NewReader(""), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "exported 4 attempt trace(s) to "+srv.URL+" (OpenTelemetry semantic conventions 1.41.0)") {
		t.Errorf("stderr: %s", errb.String())
	}
	mu.Lock()
	defer mu.Unlock()
	attempts := 0
	for _, n := range names {
		if strings.HasPrefix(n, "attempt calibration.") {
			attempts++
		}
	}
	if attempts != 4 || !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "invoke_agent ") }) {
		t.Errorf("spans received: %q", names)
	}
}
