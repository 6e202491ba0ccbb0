package server

import (
	"encoding/json"
	"path"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentproof/agentproof/api"
)

// openAPI returns the encoded OpenAPI 3.1 document of routes, generated from the
// route tables and the Go wire types (so it cannot drift from the handlers).
func openAPI(routes []route) []byte {
	b, err := json.Marshal(OpenAPIDocument(routes))
	if err != nil {
		panic("server: encoding the OpenAPI document: " + err.Error())
	}
	return b
}

var pathParam = regexp.MustCompile(`\{([a-z]+)\}`)

// OpenAPIDocument builds the OpenAPI 3.1 document of routes: one operation per route
// with its path parameters, request body schema, success response schema (under its
// status and its more statuses) and the error schema for every other status; schemas are under components/schemas, named after
// the Go types.
func OpenAPIDocument(routes []route) map[string]any {
	g := &schemaGen{defs: map[string]any{}}
	errRef := g.schema(reflect.TypeOf(errorBody{}))
	paths := map[string]map[string]any{}
	for _, rt := range routes {
		op := map[string]any{"summary": rt.summary, "operationId": operationID(rt)}
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(rt.pattern, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true,
				"schema": map[string]any{"type": "string", "pattern": idPattern.String()}})
		}
		if rt.idempotent {
			params = append(params, map[string]any{"name": api.IdempotencyKeyHeader, "in": "header", "required": false,
				"description": "makes the write idempotent: a replay with the same key returns the stored response (same ids, same status); " +
					"the same key with a different request is 409 idempotency_conflict; board token only",
				"schema": map[string]any{"type": "string", "minLength": 1, "maxLength": api.MaxIdempotencyKeyBytes}})
		}
		if params != nil {
			op["parameters"] = params
		}
		_, rawRequest := rt.request.(rawBytes)
		_, rawResponse := rt.response.(rawBytes)
		switch {
		case rawRequest:
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
				"application/octet-stream": map[string]any{"schema": binarySchema}}}
		case rt.request != nil:
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
				"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(rt.request))}}}
		}
		errBody := func(desc string) map[string]any {
			return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": errRef}}}
		}
		resp := map[string]any{"default": errBody("error {code, message, retryable}")}
		for status, desc := range requestErrors {
			resp[strconv.Itoa(status)] = errBody(desc)
		}
		if rawResponse {
			resp["304"] = map[string]any{"description": "not modified (If-None-Match matched the ETag, the quoted SHA-256)"}
			resp["416"] = map[string]any{"description": "range not satisfiable", "content": map[string]any{"text/plain": map[string]any{"schema": map[string]any{"type": "string"}}}}
		}
		for _, status := range append([]int{rt.status}, rt.more...) {
			switch {
			case rawResponse:
				desc := "the bytes (Content-Type as recorded, ETag the quoted SHA-256, Content-Digest sha-256)"
				if status == 206 {
					desc = "the requested range of the bytes"
				}
				resp[strconv.Itoa(status)] = map[string]any{"description": desc, "content": map[string]any{
					"application/octet-stream": map[string]any{"schema": binarySchema}}}
			case rt.response == nil:
				resp[strconv.Itoa(status)] = map[string]any{"description": "done"}
			default:
				resp[strconv.Itoa(status)] = map[string]any{"description": "ok", "content": map[string]any{
					"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(rt.response))}}}
			}
		}
		op["responses"] = resp
		auth := "agentToken"
		if rt.board {
			auth = "boardToken"
		}
		op["security"] = []any{map[string]any{auth: []any{}}}
		if paths[rt.pattern] == nil {
			paths[rt.pattern] = map[string]any{}
		}
		paths[rt.pattern][strings.ToLower(rt.method)] = op
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info":    map[string]any{"title": "agentproof control plane", "version": "1"},
		"paths":   paths,
		"components": map[string]any{
			"schemas": g.defs,
			"securitySchemes": map[string]any{
				"boardToken": map[string]any{"type": "http", "scheme": "bearer", "description": "the instance board token (every route)"},
				"agentToken": map[string]any{"type": "http", "scheme": "bearer", "description": "a per-run agent token (its own company and run)"},
			},
		},
	}
}

// binarySchema is the schema of raw bytes.
var binarySchema = map[string]any{"type": "string", "contentMediaType": "application/octet-stream"}

// requestErrors are the error responses every operation documents besides "default":
// what the transport refuses before or while reading a request (api.Error).
var requestErrors = map[int]string{
	400: "invalid_request (or the state machine's *_invalid / *_required codes): malformed JSON, unknown fields, " +
		"text that is not valid UTF-8 or holds NUL (U+0000), objects and arrays nested deeper than " + strconv.Itoa(api.MaxBodyDepth) +
		" levels, an idempotency or deduplication key (idempotencyKey, cancellationRequestId, callerDedupeKey, callerResultId, " +
		"eventId, sourceEventId, the Idempotency-Key header) longer than " + strconv.Itoa(api.MaxIdempotencyKeyBytes) + " bytes, a timestamp (dueBy) that is not RFC 3339; " +
		"the message names the field",
	401: "unauthorized: no bearer token, a token that is not valid, or the agent token of a run that ended (an agent token " +
		"expires when its run ends; only an identical retry of the run's completion is still accepted)",
	408: "request_timeout: the body did not arrive within the server's body timeout; the connection is closed",
	413: "request_too_large: the body exceeds " + strconv.Itoa(api.MaxBodyBytes) + " bytes (an upload: " + strconv.Itoa(api.MaxFileBytes) + " bytes)",
}

// errorBody is the error schema's Go shape.
type errorBody struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

func operationID(rt route) string {
	p := strings.NewReplacer("/api/companies", "companies", "{", "", "}", "", "/", "_").Replace(rt.pattern)
	return strings.ToLower(rt.method) + "_" + p
}

type schemaGen struct{ defs map[string]any }

var rawMessageType = reflect.TypeOf(json.RawMessage{})

func (g *schemaGen) schema(t reflect.Type) map[string]any {
	if t == rawMessageType {
		return map[string]any{} // any JSON value
	}
	switch t.Kind() {
	case reflect.Pointer:
		s := g.schema(t.Elem())
		return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64, reflect.Int32:
		return map[string]any{"type": "integer"}
	case reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		return map[string]any{"type": []any{"array", "null"}, "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Struct:
		name := path.Base(t.PkgPath()) + "." + t.Name()
		if _, ok := g.defs[name]; !ok {
			g.defs[name] = nil // reserve against recursion
			props := map[string]any{}
			var required []string
			for i := range t.NumField() {
				f := t.Field(i)
				if !f.IsExported() {
					continue
				}
				tag := f.Tag.Get("json")
				if tag == "-" {
					continue
				}
				jname, opts, _ := strings.Cut(tag, ",")
				if jname == "" {
					jname = f.Name
				}
				props[jname] = g.schema(f.Type)
				if !strings.Contains(opts, "omitempty") {
					required = append(required, jname)
				}
			}
			def := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
			if required != nil {
				def["required"] = required
			}
			g.defs[name] = def
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{}
}
