package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// jsonExporter sends spans to an OTLP/HTTP endpoint in OTLP's JSON encoding
// (Content-Type application/json: ids in hex, enums as numbers, 64-bit integers as
// strings). The OpenTelemetry exporter module encodes protobuf through gRPC's packages,
// whose initialisation every agentproof process would pay at its start; this one
// needs only the SDK and encoding/json.
type jsonExporter struct {
	url    string
	client *http.Client
}

func newJSONExporter(url string) *jsonExporter {
	return &jsonExporter{url: url, client: &http.Client{Timeout: 10 * time.Second}}
}

// ExportSpans posts spans as one ExportTraceServiceRequest; a non-2xx answer is an
// error naming the status and the start of its body.
func (e *jsonExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	body, err := json.Marshal(exportRequest(spans))
	if err != nil {
		return fmt.Errorf("tracing: encoding spans: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("tracing: sending spans to %s: %w", e.url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("tracing: %s answered %s: %s", e.url, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// Shutdown has nothing to release.
func (e *jsonExporter) Shutdown(context.Context) error { return nil }

type (
	jsonObject = map[string]any
	jsonList   = []any
)

// exportRequest is the ExportTraceServiceRequest of spans: one resource (the first
// span's) with one scope entry per instrumentation scope, in order.
func exportRequest(spans []sdktrace.ReadOnlySpan) jsonObject {
	var scopes jsonList
	index := map[string]jsonObject{}
	for _, s := range spans {
		sc := s.InstrumentationScope()
		entry := index[sc.Name+"\x00"+sc.Version]
		if entry == nil {
			entry = jsonObject{"scope": jsonObject{"name": sc.Name, "version": sc.Version}, "spans": jsonList{}, "schemaUrl": sc.SchemaURL}
			index[sc.Name+"\x00"+sc.Version] = entry
			scopes = append(scopes, entry)
		}
		entry["spans"] = append(entry["spans"].(jsonList), spanJSON(s))
	}
	res := spans[0].Resource()
	return jsonObject{"resourceSpans": jsonList{jsonObject{
		"resource":   jsonObject{"attributes": attributesJSON(res.Attributes())},
		"scopeSpans": scopes,
		"schemaUrl":  res.SchemaURL(),
	}}}
}

// spanJSON is one span in OTLP's JSON encoding.
func spanJSON(s sdktrace.ReadOnlySpan) jsonObject {
	sc := s.SpanContext()
	o := jsonObject{
		"traceId": sc.TraceID().String(), "spanId": sc.SpanID().String(), "name": s.Name(),
		"kind":              spanKind(s.SpanKind()),
		"startTimeUnixNano": strconv.FormatInt(s.StartTime().UnixNano(), 10),
		"endTimeUnixNano":   strconv.FormatInt(s.EndTime().UnixNano(), 10),
		"attributes":        attributesJSON(s.Attributes()),
	}
	if p := s.Parent(); p.IsValid() {
		o["parentSpanId"] = p.SpanID().String()
	}
	switch st := s.Status(); st.Code {
	case codes.Ok:
		o["status"] = jsonObject{"code": 1}
	case codes.Error:
		o["status"] = jsonObject{"code": 2, "message": st.Description}
	}
	return o
}

// spanKind is OTLP's SpanKind number (1 internal, 2 server, 3 client, 4 producer,
// 5 consumer; 0 unspecified).
func spanKind(k trace.SpanKind) int {
	switch k {
	case trace.SpanKindInternal:
		return 1
	case trace.SpanKindServer:
		return 2
	case trace.SpanKindClient:
		return 3
	case trace.SpanKindProducer:
		return 4
	case trace.SpanKindConsumer:
		return 5
	}
	return 0
}

// attributesJSON encodes attributes as OTLP KeyValues (strings, booleans, 64-bit
// integers as strings, doubles; anything else as its string form).
func attributesJSON(kvs []attribute.KeyValue) jsonList {
	out := jsonList{}
	for _, kv := range kvs {
		var v jsonObject
		switch kv.Value.Type() {
		case attribute.BOOL:
			v = jsonObject{"boolValue": kv.Value.AsBool()}
		case attribute.INT64:
			v = jsonObject{"intValue": strconv.FormatInt(kv.Value.AsInt64(), 10)}
		case attribute.FLOAT64:
			v = jsonObject{"doubleValue": kv.Value.AsFloat64()}
		default:
			v = jsonObject{"stringValue": kv.Value.String()}
		}
		out = append(out, jsonObject{"key": string(kv.Key), "value": v})
	}
	return out
}
