package server

import (
	"encoding"
	"encoding/json"
	"path"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
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

var pathParam = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{([a-z]+)\}`) })

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
		for _, m := range pathParam().FindAllStringSubmatch(rt.pattern, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true,
				"schema": map[string]any{"type": "string", "pattern": idPattern().String()}})
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
				"application/json": map[string]any{"schema": g.requestSchema(rt)}}}
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

// textMarshalerType is encoding.TextMarshaler: encoding/json writes a value of a type
// that implements it as a JSON string.
var textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()

// requestSchema is the schema of rt's request body: rawBodies' for a route whose
// handler reads the body as raw JSON, else the schema of its Go type.
func (g *schemaGen) requestSchema(rt route) map[string]any {
	if f, ok := rawBodies[rt.method+" "+rt.pattern]; ok {
		return f(g)
	}
	return g.schema(reflect.TypeOf(rt.request))
}

// rawBodies are the request schemas of the agent routes whose handlers take raw JSON
// (route.request is json.RawMessage), keyed "METHOD pattern": what the control plane
// accepts there (native events, PRP events and completions, the session checkpoint).
var rawBodies = map[string]func(g *schemaGen) map[string]any{
	"POST /api/companies/{company}/events": func(g *schemaGen) map[string]any {
		return map[string]any{
			"description": "a PRP event (has sourceEventId; validated against paperclip.prp.event.v1, whose run.terminal and " +
				"run.result.proposed payloads are a terminal and a run result) or a native event (no sourceEventId: " +
				"run.started or run.completed, sequence = the run's native event count + 1)",
			"oneOf": []any{g.prp("event"), g.schema(reflect.TypeOf(nativeEvent{}))},
		}
	},
	"POST " + completePattern: func(g *schemaGen) map[string]any {
		return map[string]any{
			"description": "a PRP completion of the company's active run (result and terminal; the run needs a committed " +
				"run.terminal event) or a native completion of the run named by runId (it needs a committed native " +
				"run.completed event); an identical retry of a committed completion is accepted as a duplicate",
			"oneOf": []any{g.schema(reflect.TypeOf(prpCompletion{})), g.schema(reflect.TypeOf(nativeCompletion{}))},
		}
	},
	"PUT /api/companies/{company}/session/checkpoint": func(*schemaGen) map[string]any {
		return opaqueJSON("the active run's session checkpoint: any JSON value, stored as it is and answered by GET")
	},
}

// fieldSchemas override the schema of struct fields whose Go type is json.RawMessage,
// keyed "<schema name>.<json name>".
var fieldSchemas = map[string]func(g *schemaGen) map[string]any{
	"api.CommandRequest.command": func(*schemaGen) map[string]any {
		all := controlplane.CommandKinds()
		kinds := make([]any, len(all))
		for i, k := range all {
			kinds[i] = k
		}
		return map[string]any{
			"description": "the semantic command: its kind and the kind's fields (controlplane.CommandKinds); taskId, " +
				"when given, must be the run's task. The state machine checks the fields: an invalid command is a " +
				"4xx error of /commands and an ok:false outcome of /commands/try",
			"type": "object", "required": []any{"kind"}, "additionalProperties": true,
			"properties": map[string]any{"kind": map[string]any{"enum": kinds}, "taskId": map[string]any{"type": "string"}},
		}
	},
	"controlplane.Replay.events": func(g *schemaGen) map[string]any {
		return map[string]any{"type": "array", "items": g.prp("event")}
	},
	"api.Checkpoint.checkpoint": func(*schemaGen) map[string]any {
		return opaqueJSON("the session checkpoint the active run stored (null when none)")
	},
	"controlplane.Wake.payload": func(*schemaGen) map[string]any {
		return opaqueJSON("the wake's payload, by reason: {issueId} for issue_assigned, {commentId, issueId} for " +
			"issue_commented, {interactionId, outcome} for interaction_resolved, {approvalId, decision} for " +
			"approval_resolved, {runId, continuation} for scheduled_retry, {completedTaskId} for blockers_resolved, " +
			"{reason} for manual; a schedule_wake command's own payload (any JSON value, null when none)")
	},
	"controlplane.InteractionResult.result": func(*schemaGen) map[string]any {
		return opaqueJSON("the result the board resolved the interaction with (for a question, the answer)")
	},
	"server.nativeCompletion.result": func(*schemaGen) map[string]any {
		return map[string]any{"description": "the run's result; presentationDecision.commentId names the comment that is " +
			"the run's message to the human", "type": "object"}
	},
}

// opaqueJSON is the schema of an opaque value (a session checkpoint, a wake's
// payload): any JSON value, described.
func opaqueJSON(desc string) map[string]any {
	return map[string]any{"description": desc, "type": []any{"object", "array", "string", "number", "boolean", "null"}}
}

// nativeEvent is the request schema's Go shape of a native run event.
type nativeEvent struct {
	EventID  string `json:"eventId" minLength:"1"`
	RunID    string `json:"runId" minLength:"1"`
	Sequence int64  `json:"sequence" minimum:"1"`
	Type     string `json:"type" enum:"run.started,run.completed"`
}

// prpCompletion is the request schema's Go shape of a PRP completion
// (controlplane.CompleteInput).
type prpCompletion struct {
	Result          prpRef `json:"result" prp:"result"`
	Terminal        prpRef `json:"terminal" prp:"terminal"`
	TurnID          string `json:"turnId,omitempty"`
	CallerResultID  string `json:"callerResultId,omitempty" maxLength:"256"`
	CallerDedupeKey string `json:"callerDedupeKey,omitempty" maxLength:"256"`
}

// nativeCompletion is the request schema's Go shape of a native completion
// (controlplane.NativeRunResult): Result, when given, is the run's result (the
// heartbeat runner puts presentationDecision there).
type nativeCompletion struct {
	RunID   string          `json:"runId" minLength:"1"`
	Status  string          `json:"status" enum:"succeeded,failed,cancelled"`
	Summary string          `json:"summary,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
}

// prpRef is a field holding a PRP document; its prp tag names the schema (PRPSchema).
type prpRef struct{}

var prpRefType = reflect.TypeOf(prpRef{})

// prpNames are the component names of the imported PRP schemas, by PRPSchema name.
var prpNames = map[string]string{"event": "paperclip.prp.event.v1", "terminal": "paperclip.prp.terminal.v1", "result": "paperclip.run_result.v1"}

// prp imports the control plane's PRP schema name (and, through its references, the
// others) into components/schemas and returns a reference to it: $id and $schema are
// dropped, each $defs entry x becomes the component "<name>.x", and references are
// rewritten to component paths ("terminal.schema.json" →
// #/components/schemas/paperclip.prp.terminal.v1, "#/$defs/id" →
// #/components/schemas/paperclip.prp.event.v1.id), so the document is one
// self-contained OpenAPI 3.1 file.
func (g *schemaGen) prp(name string) map[string]any {
	comp := prpNames[name]
	ref := map[string]any{"$ref": "#/components/schemas/" + comp}
	if _, ok := g.defs[comp]; ok {
		return ref
	}
	raw, err := controlplane.PRPSchema(name)
	if err != nil {
		panic("server: PRP schema " + name + ": " + err.Error())
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		panic("server: PRP schema " + name + ": " + err.Error())
	}
	g.defs[comp] = nil // reserve against recursion
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if r, ok := x["$ref"].(string); ok {
				switch {
				case strings.HasPrefix(r, "#/$defs/"):
					x["$ref"] = "#/components/schemas/" + comp + "." + strings.TrimPrefix(r, "#/$defs/")
				case strings.HasSuffix(r, ".schema.json"):
					x["$ref"] = g.prp(strings.TrimSuffix(r, ".schema.json"))["$ref"]
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	delete(doc, "$id")
	delete(doc, "$schema")
	walk(doc)
	if defs, ok := doc["$defs"].(map[string]any); ok {
		for k, d := range defs {
			g.defs[comp+"."+k] = d
		}
		delete(doc, "$defs")
	}
	g.defs[comp] = doc
	return ref
}

func (g *schemaGen) schema(t reflect.Type) map[string]any {
	if t == rawMessageType {
		return map[string]any{} // any JSON value
	}
	if t.Kind() == reflect.Struct && t.Implements(textMarshalerType) {
		return map[string]any{"type": "string"} // encoded as its text (a driver name)
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
				switch override, ok := fieldSchemas[name+"."+jname]; {
				case ok:
					props[jname] = override(g)
				case f.Type == prpRefType:
					props[jname] = g.prp(f.Tag.Get("prp"))
				default:
					props[jname] = fieldConstraints(g.schema(f.Type), f.Tag)
				}
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

// fieldConstraints adds the JSON Schema constraints of a field's struct tags
// (minLength, maxLength, minimum: numbers; enum: comma-separated strings) to its schema.
func fieldConstraints(s map[string]any, tag reflect.StructTag) map[string]any {
	for _, k := range []string{"minLength", "maxLength", "minimum"} {
		if v := tag.Get(k); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				panic("server: struct tag " + k + "=" + v + " is not a number")
			}
			s[k] = n
		}
	}
	if v := tag.Get("enum"); v != "" {
		var enum []any
		for _, e := range strings.Split(v, ",") {
			enum = append(enum, e)
		}
		s["enum"] = enum
	}
	return s
}
