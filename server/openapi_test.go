package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// openAPISchemas compiles schemas of the document a world's server serves.
type openAPISchemas struct {
	t    *testing.T
	doc  map[string]any
	comp *jsonschema.Compiler
}

const openAPIURL = "https://agentproof.invalid/openapi.json"

func loadOpenAPI(t *testing.T, w *boardWorld) *openAPISchemas {
	t.Helper()
	_, _, raw := call(t, w.base, "GET", "/openapi.json", "", nil)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	if err := comp.AddResource(openAPIURL, doc); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return &openAPISchemas{t: t, doc: m, comp: comp}
}

// compile compiles the schema at the JSON pointer ptr (below the operation of pattern
// and method, for example "requestBody" or "responses/200").
func (s *openAPISchemas) compile(method, pattern, ptr string) *jsonschema.Schema {
	s.t.Helper()
	p := "#/paths/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(pattern) + "/" + strings.ToLower(method) + "/" + ptr + "/content/application~1json/schema"
	sch, err := s.comp.Compile(openAPIURL + p)
	if err != nil {
		s.t.Fatalf("%s %s: compiling %s: %v", method, pattern, p, err)
	}
	return sch
}

func validates(sch *jsonschema.Schema, body string) error {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

const (
	eventsPattern     = "/api/companies/{company}/events"
	completePattern   = "/api/companies/{company}/complete"
	commandsPattern   = "/api/companies/{company}/commands"
	tryPattern        = "/api/companies/{company}/commands/try"
	checkpointPattern = "/api/companies/{company}/session/checkpoint"
	replayPattern     = "/api/companies/{company}/runs/{run}/events"
)

// validResult is a paperclip.run_result.v1 run result; disposition replaces DISP.
const validResult = `{"reportedWorkDisposition":"DISP","summary":"did it","completionClaim":{"contractRevision":1,"objectiveSatisfied":true,` +
	`"criteria":[{"criterionId":"c","status":"satisfied","evidenceRefs":["run:run-1"]}],"remainingWork":[]},` +
	`"evidence":[],"verification":[{"commandOrCheck":"looked","status":"passed"}],"attentionRequests":[],"artifacts":[]}`

const validTerminal = `{"turnTerminalState":"completed","runTerminalState":"succeeded","reportedWorkDisposition":"done"}`

// prpEvent is a PRP event of run-1 (source instance capability-mock, the run's binding).
func prpEvent(seq int, eventType, payload string) string {
	return fmt.Sprintf(`{"schema":"paperclip.prp.event.v1","sourceEventId":"e-%d","sourceSeq":%d,"sourceInstanceId":"capability-mock",`+
		`"sourceKind":"runner","runId":"run-1","turnId":"run-1:turn-1","eventType":%q,"schemaVersion":1,"priority":1,`+
		`"emittedAt":"2026-12-01T10:00:00.000Z","payload":%s}`, seq, seq, eventType, payload)
}

// TestAgentRequestsMatchOpenAPISchemas checks the request schemas of the agent routes
// in both directions against the running server: every body of a real run (the
// calls an exec agent makes, docs/agent-protocol.md: checkpoint, commands, PRP events,
// a PRP completion and its identical retry after the run ended; a native run with
// native events and a native completion) validates against its documented request
// schema and is accepted; every body the schema rejects is refused by the server with
// a 4xx error; the answers validate against the documented response schemas.
func TestAgentRequestsMatchOpenAPISchemas(t *testing.T) {
	t.Parallel()
	result := strings.Replace(validResult, "DISP", "done", 1)
	type req struct {
		name, method, pattern, path, body string
		status                            int // 0: any 4xx (a refusal)
	}
	send := func(t *testing.T, w *boardWorld, s *openAPISchemas, r req) {
		t.Helper()
		switch {
		case r.method == "GET": // no body
		case r.status != 0:
			if err := validates(s.compile(r.method, r.pattern, "requestBody"), r.body); err != nil {
				t.Errorf("%s: the body the agent protocol sends does not match the request schema of %s %s: %v\n%s", r.name, r.method, r.pattern, err, r.body)
			}
		case validates(s.compile(r.method, r.pattern, "requestBody"), r.body) == nil:
			t.Errorf("%s: the request schema of %s %s accepts a body it should reject:\n%s", r.name, r.method, r.pattern, r.body)
		}
		status, code, b := call(t, w.base, r.method, "/api/companies/"+w.co.ID()+r.path, w.runTok, []byte(r.body))
		switch {
		case r.status == 0 && (status < 400 || status >= 500):
			t.Errorf("%s: the server answered %d %s to a body the schema rejects, want a 4xx refusal: %s", r.name, status, code, b)
		case r.status != 0 && status != r.status:
			t.Fatalf("%s: status %d %s, want %d: %s", r.name, status, code, r.status, b)
		case r.status == 204:
			if len(b) != 0 {
				t.Errorf("%s: 204 with a body %s", r.name, b)
			}
		case r.status != 0:
			if err := validates(s.compile(r.method, r.pattern, fmt.Sprintf("responses/%d", r.status)), string(b)); err != nil {
				t.Errorf("%s: the answer does not match the response schema: %v\n%s", r.name, err, b)
			}
		}
	}

	t.Run("PRP run", func(t *testing.T) {
		t.Parallel()
		w := newBoardWorld(t)
		s := loadOpenAPI(t, w)
		complete := `{"result":` + result + `,"terminal":` + validTerminal + `,"turnId":"run-1:turn-1","callerResultId":"run-1:result","callerDedupeKey":"run-1:complete"}`
		for _, r := range []req{
			{"checkpoint", "PUT", checkpointPattern, "/session/checkpoint", `{"turn":1,"notes":["a"]}`, 204},
			{"checkpoint read back", "GET", checkpointPattern, "/session/checkpoint", "", 200},
			{"progress", "POST", commandsPattern, "/commands", `{"runId":"run-1","idempotencyKey":"p1","command":{"kind":"report_progress","body":"working"}}`, 200},
			{"try a command", "POST", tryPattern, "/commands/try", `{"runId":"run-1","idempotencyKey":"p2","command":{"kind":"report_progress","body":"still working"}}`, 200},

			// refused by both the schema and the server
			{"command without a kind", "POST", commandsPattern, "/commands", `{"runId":"run-1","idempotencyKey":"x1","command":{"body":"no kind"}}`, 0},
			{"unknown command kind", "POST", commandsPattern, "/commands", `{"runId":"run-1","idempotencyKey":"x2","command":{"kind":"launch_rockets"}}`, 0},
			{"command that is not an object", "POST", commandsPattern, "/commands", `{"runId":"run-1","idempotencyKey":"x3","command":"report_progress"}`, 0},
			{"unknown envelope field", "POST", commandsPattern, "/commands", `{"runId":"run-1","idempotencyKey":"x4","command":{"kind":"report_progress","body":"b"},"urgent":true}`, 0},
			{"event that is not an object", "POST", eventsPattern, "/events", `[1,2]`, 0},
			{"PRP terminal with an empty payload", "POST", eventsPattern, "/events", prpEvent(9, "run.terminal", `{}`), 0},
			{"PRP result with an unknown disposition", "POST", eventsPattern, "/events", prpEvent(9, "run.result.proposed", strings.Replace(validResult, "DISP", "finished", 1)), 0},
			{"PRP event of an unknown type", "POST", eventsPattern, "/events", prpEvent(9, "run.exploded", `{}`), 0},
			{"PRP event with priority 7", "POST", eventsPattern, "/events", strings.Replace(prpEvent(9, "turn.started", `{}`), `"priority":1`, `"priority":7`, 1), 0},
			{"native event of an unknown type", "POST", eventsPattern, "/events", `{"eventId":"n1","runId":"run-1","sequence":1,"type":"run.exploded"}`, 0},
			{"completion without a terminal", "POST", completePattern, "/complete", `{"result":` + result + `}`, 0},
			{"completion with an unknown disposition", "POST", completePattern, "/complete", `{"result":` + strings.Replace(validResult, "DISP", "finished", 1) + `,"terminal":` + validTerminal + `}`, 0},
			{"blocked result without a blocker", "POST", completePattern, "/complete", `{"result":` + strings.Replace(validResult, "DISP", "blocked", 1) + `,"terminal":` + validTerminal + `}`, 0},
			{"native completion with an unknown status", "POST", completePattern, "/complete", `{"runId":"run-1","status":"done"}`, 0},
			{"completion that is not an object", "POST", completePattern, "/complete", `"done"`, 0},

			{"result event", "POST", eventsPattern, "/events", prpEvent(1, "run.result.proposed", result), 200},
			{"terminal event", "POST", eventsPattern, "/events", prpEvent(2, "run.terminal", validTerminal), 200},
			{"replay of the PRP events", "GET", replayPattern, "/runs/run-1/events?sourceInstanceId=capability-mock", "", 200},
			{"PRP completion", "POST", completePattern, "/complete", complete, 204},
			{"identical retry of the completion after the run ended", "POST", completePattern, "/complete", complete, 204},
		} {
			send(t, w, s, r)
		}
		// the replayed events are PRP events, checked against the event schema
		_, _, b := call(t, w.base, "GET", "/api/companies/"+w.co.ID()+"/runs/run-1/events?sourceInstanceId=capability-mock", w.boardTk, nil)
		var replay struct {
			Events []json.RawMessage `json:"events"`
		}
		if err := json.Unmarshal(b, &replay); err != nil || len(replay.Events) != 2 {
			t.Fatalf("replay %s: %v", b, err)
		}
	})

	t.Run("native run", func(t *testing.T) {
		t.Parallel()
		w := newBoardWorld(t)
		s := loadOpenAPI(t, w)
		for _, r := range []req{
			{"run.started", "POST", eventsPattern, "/events", `{"eventId":"n1","runId":"run-1","sequence":1,"type":"run.started"}`, 200},
			{"run.completed", "POST", eventsPattern, "/events", `{"eventId":"n2","runId":"run-1","sequence":2,"type":"run.completed"}`, 200},
			{"native completion with the run's message", "POST", completePattern, "/complete", `{"runId":"run-1","status":"succeeded","summary":"done","result":{"presentationDecision":{"commentId":null}}}`, 204},
		} {
			send(t, w, s, r)
		}
	})
}

// TestAgentSchemasAreSpecific: every request and success response schema reachable
// from an agent route (following $ref, properties, items, oneOf and anyOf) says
// something: none is the empty schema {} that accepts anything undocumented.
func TestAgentSchemasAreSpecific(t *testing.T) {
	t.Parallel()
	w := newBoardWorld(t)
	s := loadOpenAPI(t, w)
	schemas := s.doc["components"].(map[string]any)["schemas"].(map[string]any)
	var empty []string
	var walk func(v any, where string, seen map[string]bool)
	walk = func(v any, where string, seen map[string]bool) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		if len(m) == 0 {
			empty = append(empty, where)
			return
		}
		if ref, ok := m["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/components/schemas/")
			if !seen[name] {
				seen[name] = true
				walk(schemas[name], name, seen)
			}
			return
		}
		if props, ok := m["properties"].(map[string]any); ok {
			for k, p := range props {
				walk(p, where+"."+k, seen)
			}
		}
		walk(m["items"], where+"[]", seen)
		for _, k := range []string{"oneOf", "anyOf"} {
			list, _ := m[k].([]any)
			for i, x := range list {
				walk(x, fmt.Sprintf("%s|%s[%d]", where, k, i), seen)
			}
		}
	}
	agentOps := 0
	for pattern, methods := range s.doc["paths"].(map[string]any) {
		for method, rawOp := range methods.(map[string]any) {
			op := rawOp.(map[string]any)
			sec := op["security"].([]any)[0].(map[string]any)
			if _, ok := sec["agentToken"]; !ok {
				continue
			}
			agentOps++
			where := strings.ToUpper(method) + " " + pattern
			if rb, ok := op["requestBody"].(map[string]any); ok {
				if js, ok := rb["content"].(map[string]any)["application/json"].(map[string]any); ok { // raw uploads have none
					walk(js["schema"], where+" request", map[string]bool{})
				}
			}
			for status, rawResp := range op["responses"].(map[string]any) {
				if !strings.HasPrefix(status, "2") {
					continue
				}
				if c, ok := rawResp.(map[string]any)["content"].(map[string]any); ok {
					if js, ok := c["application/json"].(map[string]any); ok { // downloads are raw bytes
						walk(js["schema"], where+" "+status, map[string]bool{})
					}
				}
			}
		}
	}
	if agentOps != 14 {
		t.Errorf("%d agent operations, want 14 (update the test when routes change)", agentOps)
	}
	if len(empty) > 0 {
		t.Errorf("agent route schemas that are the empty schema {}:\n%s", strings.Join(empty, "\n"))
	}
}
