package tracing

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentproof/agentproof/result"
)

// maxATIF bounds the trajectory file read for a trace, in bytes.
const maxATIF = 32 << 20

// atif is the part of an ATIF document (any version) the trace is made of.
type atif struct {
	SessionID string `json:"session_id"`
	Agent     struct {
		Name      string `json:"name"`
		Version   string `json:"version"`
		ModelName string `json:"model_name"`
	} `json:"agent"`
	Steps []struct {
		Source    string `json:"source"`
		Timestamp string `json:"timestamp"`
		ModelName string `json:"model_name"`
		ToolCalls []struct {
			ID   string `json:"tool_call_id"`
			Name string `json:"function_name"`
		} `json:"tool_calls"`
		Metrics *struct {
			Prompt     int64 `json:"prompt_tokens"`
			Completion int64 `json:"completion_tokens"`
		} `json:"metrics"`
		LLMCallCount *int `json:"llm_call_count"`
	} `json:"steps"`
}

// readATIF reads a trajectory file (at most maxATIF bytes).
func readATIF(path string) (*atif, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxATIF+1))
	if err != nil || len(b) > maxATIF {
		return nil, fmt.Errorf("tracing: %s: unreadable or larger than %d bytes", path, maxATIF)
	}
	var d atif
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("tracing: %s: %w", path, err)
	}
	return &d, nil
}

// exportRun records one run: an "invoke_agent <agent>" span over the run's steps
// (from the first step's time to the attempt's end when the steps carry times, else
// the attempt's span), a "chat <model>" span for each agent step that called the
// model (token usage when recorded) and an "execute_tool <name>" span for each tool
// call, each from its step's time to the next step's.
func exportRun(ctx context.Context, tracer trace.Tracer, r *result.Result, ref result.TrajectoryRef, d *atif, start, end time.Time) {
	agent, model := d.Agent.Name, d.Agent.ModelName
	if agent == "" || agent == "unknown" {
		agent = r.ProfileID
	}
	if model == "" {
		model = r.Model
	}
	times := make([]time.Time, len(d.Steps)+1)
	times[len(d.Steps)] = end
	for i := len(d.Steps) - 1; i >= 0; i-- {
		times[i] = parseTime(d.Steps[i].Timestamp)
		if times[i].IsZero() || times[i].After(times[i+1]) {
			times[i] = times[i+1]
		}
	}
	runStart := start
	if len(d.Steps) > 0 && !times[0].IsZero() && times[0].After(start) {
		runStart = times[0]
	}
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(agent),
		semconv.GenAIProviderNameKey.String(r.Provider), semconv.GenAIRequestModel(model),
		AttrTrajectory.String(ref.Format), AttrPartialRun.Bool(ref.Partial)}
	if d.SessionID != "" {
		attrs = append(attrs, semconv.GenAIConversationID(d.SessionID))
	}
	if ref.RunID != "" {
		attrs = append(attrs, semconv.GenAIAgentID(ref.RunID))
	}
	runCtx, run := tracer.Start(ctx, "invoke_agent "+agent, trace.WithTimestamp(runStart), trace.WithAttributes(attrs...))
	for i, s := range d.Steps {
		if s.Source != "agent" {
			continue
		}
		from, to := times[i], times[i+1]
		if s.Metrics != nil || (s.LLMCallCount != nil && *s.LLMCallCount > 0) {
			m := model
			if s.ModelName != "" {
				m = s.ModelName
			}
			chatAttrs := []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(r.Provider), semconv.GenAIRequestModel(m)}
			if s.Metrics != nil {
				chatAttrs = append(chatAttrs, semconv.GenAIUsageInputTokens(int(s.Metrics.Prompt)), semconv.GenAIUsageOutputTokens(int(s.Metrics.Completion)))
			}
			_, chat := tracer.Start(runCtx, "chat "+m, trace.WithTimestamp(from), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(chatAttrs...))
			chat.End(trace.WithTimestamp(to))
		}
		for _, tc := range s.ToolCalls {
			_, tool := tracer.Start(runCtx, "execute_tool "+tc.Name, trace.WithTimestamp(from), trace.WithAttributes(
				semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(tc.Name), semconv.GenAIToolCallID(tc.ID), semconv.GenAIToolTypeKey.String(toolTypeDefault)))
			tool.End(trace.WithTimestamp(to))
		}
	}
	run.End(trace.WithTimestamp(end))
}
