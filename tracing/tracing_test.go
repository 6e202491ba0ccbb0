package tracing

import (
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// receiver is a local OTLP/HTTP trace receiver: it decodes every export request with
// the OTLP protobuf definitions' own JSON mapping (protojson: unknown fields refused)
// and keeps its spans.
type receiver struct {
	mu     sync.Mutex
	spans  []*tracepb.Span
	schema []string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "not an OTLP/HTTP JSON trace export", http.StatusBadRequest)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	b, err := io.ReadAll(body)
	var req collector.ExportTraceServiceRequest
	if err == nil {
		b, err = hexIDsToBase64(b)
	}
	if err == nil {
		err = protojson.Unmarshal(b, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	for _, rs := range req.ResourceSpans {
		rc.schema = append(rc.schema, rs.SchemaUrl)
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
	rc.mu.Unlock()
	out, _ := protojson.Marshal(&collector.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// hexIDsToBase64 rewrites the ids of an OTLP JSON request (hex, as OTLP's JSON
// encoding requires: 32 digits for a trace id, 16 for a span id) into the base64 the
// generic protobuf JSON mapping reads. An id of another form is an error.
func hexIDsToBase64(b []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	var bad error
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				size := map[string]int{"traceId": 16, "spanId": 8, "parentSpanId": 8}[k]
				if s, ok := e.(string); ok && size > 0 {
					raw, err := hex.DecodeString(s)
					if err != nil || len(raw) != size {
						bad = fmt.Errorf("%s %q is not %d bytes in hex", k, s, size)
					}
					x[k] = base64.StdEncoding.EncodeToString(raw)
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(doc)
	if bad != nil {
		return nil, bad
	}
	return json.Marshal(doc)
}

// attr is a span's attribute as a string ("" when absent).
func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			if _, ok := kv.Value.Value.(*commonpb.AnyValue_IntValue); ok {
				return strconv.FormatInt(kv.Value.GetIntValue(), 10)
			}
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// writeAttempt writes one attempt directory: result.json with one trajectory, the
// ATIF file of a codex run with a model call (usage recorded) that made two tool calls.
func writeAttempt(t *testing.T, campaignDir string) result.Result {
	t.Helper()
	rel := "core/codex/local/message-marker/attempt-1"
	dir := filepath.Join(campaignDir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Join(dir, "logs", "agent", "runs", "run-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	atif := `{"schema_version": "ATIF-v1.8", "session_id": "sess-1", "agent": {"name": "codex", "version": "0.171.0", "model_name": "gpt-5"},
	 "steps": [
	  {"step_id": 1, "timestamp": "2026-12-06T01:00:01Z", "source": "user", "message": "write the marker"},
	  {"step_id": 2, "timestamp": "2026-12-06T01:00:02Z", "source": "agent", "message": "", "llm_call_count": 1,
	   "tool_calls": [{"tool_call_id": "call-1", "function_name": "comment", "arguments": {}}, {"tool_call_id": "call-2", "function_name": "shell", "arguments": {}}],
	   "metrics": {"prompt_tokens": 120, "completion_tokens": 30, "cached_tokens": 0}},
	  {"step_id": 3, "timestamp": "2026-12-06T01:00:04Z", "source": "agent", "message": "done", "llm_call_count": 1, "metrics": {"prompt_tokens": 200, "completion_tokens": 5, "cached_tokens": 0}}
	 ]}`
	if err := os.WriteFile(filepath.Join(dir, "logs", "agent", "runs", "run-1", "trajectory.json"), []byte(atif), 0o644); err != nil {
		t.Fatal(err)
	}
	r := result.Result{Schema: result.ResultSchema, ExecutionID: "core.codex.local.message-marker", CampaignID: "camp", SuiteID: "core",
		SuiteDefinitionHash: strings.Repeat("a", 64), ProfileID: "codex", EnvironmentID: "local", CaseID: "message-marker",
		Provider: "openai", Model: "gpt-5", Attempt: 1, Verdict: verdict.Passed, RunIDs: []string{"run-1"},
		StartedAt: "2026-12-06T01:00:00Z", FinishedAt: "2026-12-06T01:00:05Z", DurationMs: 5000, MatcherResults: []result.MatcherResult{},
		Cleanup: result.CleanupPassed, Evidence: []string{"logs/agent/runs/run-1/trajectory.json"},
		Trajectories: []result.TrajectoryRef{{Path: "logs/agent/runs/run-1/trajectory.json", Format: "codex-exec-json", RunID: "run-1", Steps: 3, ToolCalls: 2}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := result.DecodeResult("fixture", b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, result.ResultFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	r.Evidence = []string{rel + "/logs/agent/runs/run-1/trajectory.json"} // as campaign.json lists it
	return r
}

// TestExportToReceiver exports a campaign of one attempt to a local OTLP receiver and
// checks the spans: the attempt, one invoke_agent span with the agent, provider,
// model and conversation, two chat spans with their token usage, two execute_tool
// spans with the tool names and call ids, all of one trace under the right parents,
// with the pinned semantic-conventions schema URL.
func TestExportToReceiver(t *testing.T) {
	t.Parallel()
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	campaignDir := t.TempDir()
	r := writeAttempt(t, campaignDir)
	c := &result.Campaign{CampaignID: "camp", Results: []result.Result{r, result.Synthetic(nil, "camp", "core.codex.local.other", "missing")}}
	n, err := Export(context.Background(), srv.URL, campaignDir, c)
	if err != nil || n != 1 {
		t.Fatalf("Export: %d trace(s), %v", n, err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	byName := map[string][]*tracepb.Span{}
	var names []string
	for _, s := range rc.spans {
		byName[s.Name] = append(byName[s.Name], s)
		names = append(names, s.Name)
	}
	slices.Sort(names)
	want := []string{"attempt core.codex.local.message-marker", "chat gpt-5", "chat gpt-5", "execute_tool comment", "execute_tool shell", "invoke_agent codex"}
	if !slices.Equal(names, want) {
		t.Fatalf("spans %q, want %q", names, want)
	}
	root, run := byName[want[0]][0], byName["invoke_agent codex"][0]
	for _, s := range rc.spans {
		if string(s.TraceId) != string(root.TraceId) {
			t.Errorf("%s is in another trace", s.Name)
		}
	}
	if len(root.ParentSpanId) != 0 || string(run.ParentSpanId) != string(root.SpanId) {
		t.Error("invoke_agent is not the attempt's child, or the attempt has a parent")
	}
	checks := map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "codex", "gen_ai.provider.name": "openai",
		"gen_ai.request.model": "gpt-5", "gen_ai.conversation.id": "sess-1", "gen_ai.agent.id": "run-1"}
	for k, v := range checks {
		if got := attr(run, k); got != v {
			t.Errorf("invoke_agent %s = %q, want %q", k, got, v)
		}
	}
	if attr(root, "agentproof.verdict") != "passed" || attr(root, "agentproof.execution_id") != "core.codex.local.message-marker" {
		t.Errorf("attempt span attributes %v", root.Attributes)
	}
	var tokens []string
	for _, s := range byName["chat gpt-5"] {
		if string(s.ParentSpanId) != string(run.SpanId) || attr(s, "gen_ai.operation.name") != "chat" {
			t.Errorf("chat span %v", s)
		}
		tokens = append(tokens, attr(s, "gen_ai.usage.input_tokens")+"/"+attr(s, "gen_ai.usage.output_tokens"))
	}
	slices.Sort(tokens)
	if !slices.Equal(tokens, []string{"120/30", "200/5"}) {
		t.Errorf("chat token usage %v", tokens)
	}
	tool := byName["execute_tool shell"][0]
	if attr(tool, "gen_ai.tool.name") != "shell" || attr(tool, "gen_ai.tool.call.id") != "call-2" || attr(tool, "gen_ai.operation.name") != "execute_tool" {
		t.Errorf("execute_tool span %v", tool.Attributes)
	}
	if len(rc.schema) == 0 || rc.schema[0] != "https://opentelemetry.io/schemas/"+SemconvVersion {
		t.Errorf("schema URLs %v, want the semantic conventions %s", rc.schema, SemconvVersion)
	}
	if tool.StartTimeUnixNano != uint64(parseTime("2026-12-06T01:00:02Z").UnixNano()) || tool.EndTimeUnixNano != uint64(parseTime("2026-12-06T01:00:04Z").UnixNano()) {
		t.Errorf("the tool span runs %d..%d, want its step's time to the next step's", tool.StartTimeUnixNano, tool.EndTimeUnixNano)
	}
}

// TestExportUnreachable: an endpoint nobody listens on is an error, not a hang.
func TestExportUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	campaignDir := t.TempDir()
	c := &result.Campaign{CampaignID: "camp", Results: []result.Result{writeAttempt(t, campaignDir)}}
	ctx, cancel := context.WithTimeout(context.Background(), 20e9)
	defer cancel()
	if _, err := Export(ctx, url, campaignDir, c); err == nil {
		t.Error("exporting to a closed port succeeded")
	}
}
