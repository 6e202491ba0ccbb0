// Package tracing exports attempts as OpenTelemetry traces over OTLP/HTTP (its JSON
// encoding), with the
// GenAI semantic conventions (SemconvVersion): one trace per attempt, a root span for
// the attempt, an "invoke_agent" span per run of the agent, and under it a "chat" span
// per model call and an "execute_tool" span per tool call its ATIF trajectory records.
// Nothing is exported unless a caller asks (`agentproof run --otlp-endpoint`).
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/verdict"
)

// SemconvVersion is the version of the OpenTelemetry semantic conventions the spans
// follow (the GenAI attributes included), recorded as the resource's schema URL.
const SemconvVersion = "1.41.0"

// Attribute keys of agentproof's own facts on the attempt span.
const (
	AttrCampaign    = attribute.Key("agentproof.campaign_id")
	AttrExecution   = attribute.Key("agentproof.execution_id")
	AttrAttempt     = attribute.Key("agentproof.attempt")
	AttrVerdict     = attribute.Key("agentproof.verdict")
	AttrFailure     = attribute.Key("agentproof.failure_class")
	AttrTrajectory  = attribute.Key("agentproof.trajectory.format")
	AttrPartialRun  = attribute.Key("agentproof.trajectory.partial")
	attemptTimeout  = 30 * time.Second
	toolTypeDefault = "function"
)

// Export sends the trace of every executed attempt of campaign c (its chosen results;
// campaignDir holds their attempt directories) to the OTLP/HTTP endpoint (a URL such
// as http://127.0.0.1:4318; the traces path /v1/traces is added when it has none). The full result.json
// and the trajectories are read from each attempt directory; an attempt whose files
// cannot be read is skipped and counted in the error. It returns how many traces were
// sent.
func Export(ctx context.Context, endpoint, campaignDir string, c *result.Campaign) (int, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return 0, fmt.Errorf("tracing: the OTLP endpoint %q is not an http(s) URL", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	exp := newJSONExporter(u.String())
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName("agentproof"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	tracer := tp.Tracer("github.com/agentproof/agentproof/tracing", trace.WithSchemaURL(semconv.SchemaURL))
	sent, skipped := 0, 0
	for i := range c.Results {
		r := &c.Results[i]
		if r.Synthetic || r.Attempt < 1 {
			continue
		}
		dir := result.AttemptDir(r)
		full, err := readResult(filepath.Join(campaignDir, dir))
		if dir == "" || err != nil {
			skipped++
			continue
		}
		exportAttempt(ctx, tracer, c.CampaignID, filepath.Join(campaignDir, dir), full)
		sent++
	}
	flushCtx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	err = errors.Join(tp.ForceFlush(flushCtx), tp.Shutdown(flushCtx))
	if skipped > 0 {
		err = errors.Join(err, fmt.Errorf("tracing: %d attempt(s) whose result.json could not be read were not exported", skipped))
	}
	return sent, err
}

// readResult reads the result.json of an attempt directory.
func readResult(dir string) (*result.Result, error) {
	b, err := os.ReadFile(filepath.Join(dir, result.ResultFile))
	if err != nil {
		return nil, err
	}
	return result.DecodeResult(dir, b)
}

// exportAttempt records the spans of one attempt: the attempt span from its start to
// its end, and each run's spans under it.
func exportAttempt(ctx context.Context, tracer trace.Tracer, campaignID, dir string, r *result.Result) {
	start, end := parseTime(r.StartedAt), parseTime(r.FinishedAt)
	ctx, span := tracer.Start(ctx, "attempt "+r.ExecutionID, trace.WithTimestamp(start), trace.WithAttributes(
		AttrCampaign.String(campaignID), AttrExecution.String(r.ExecutionID), AttrAttempt.Int(r.Attempt),
		AttrVerdict.String(string(r.Verdict))))
	if r.FailureClass != "" {
		span.SetAttributes(AttrFailure.String(string(r.FailureClass)))
	}
	switch result.Outcome(r) {
	case verdict.Passed:
		span.SetStatus(codes.Ok, "")
	default:
		span.SetStatus(codes.Error, string(r.Verdict)+": "+result.Clip(result.Clean(r.Error, true), 200))
	}
	for _, ref := range r.Trajectories {
		doc, err := readATIF(filepath.Join(dir, filepath.FromSlash(ref.Path)))
		if err != nil {
			continue
		}
		exportRun(ctx, tracer, r, ref, doc, start, end)
	}
	span.End(trace.WithTimestamp(end))
}

// parseTime parses an RFC 3339 time; the zero time when it does not parse.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}
