package agent

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent/session"
	acp "github.com/coder/acp-go-sdk"
)

// FuzzACPSessionUpdate feeds arbitrary session/update params (as the SDK decodes them)
// into the driver's turn summary: it must not panic and must keep its bounds.
func FuzzACPSessionUpdate(f *testing.F) {
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}`))
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"x","status":"completed","locations":[{"path":"/a"}]}}`))
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[{"content":"c","priority":"high","status":"pending"}]}}`))
	f.Add([]byte(`{"sessionId":"other","update":{"sessionUpdate":"usage_update","used":1,"size":2,"cost":{"amount":1,"currency":"USD"}}}`))
	f.Fuzz(func(t *testing.T, params []byte) {
		var n acp.SessionNotification
		if json.Unmarshal(params, &n) != nil {
			return
		}
		rec := session.NewRecord(1, "run", time.Now())
		c := &acpConn{h: recordHost{rec}, info: session.Info{SessionID: "s"}}
		for range 3 {
			if err := c.SessionUpdate(context.Background(), n); err != nil {
				t.Fatal(err)
			}
		}
		r := rec.Result()
		if len(r.Message) > session.MaxTurnMessageBytes || len(r.ToolCalls) > session.MaxTurnRecords || len(r.ProtocolViolations) > session.MaxTurnRecords {
			t.Fatalf("bounds broken: %d message bytes, %d tool calls", len(r.Message), len(r.ToolCalls))
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatalf("the turn result does not encode: %v", err)
		}
	})
}

// recordHost is a session.Host that records into one turn's record (and asks no one).
type recordHost struct{ rec *session.Record }

func (h recordHost) Update(f func(session.Recorder)) bool { h.rec.Update(f); return true }

func (recordHost) Permission(context.Context, session.PermissionRequest) session.PermissionDecision {
	return session.PermissionDecision{Cancelled: true}
}

func (recordHost) Question(context.Context, session.QuestionRequest) session.QuestionAnswer {
	return session.QuestionAnswer{Cancelled: true}
}

func (recordHost) Note(string, any) {}
