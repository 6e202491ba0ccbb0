package server

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/agentproof/agentproof/api"
)

// callLedger records, per run, every request its agent token made (api.AgentCall): the
// control plane's own observation of an agent's tool calls, independent of what the
// agent reports. It lives in memory (docs/journeys.md "Task titles": a restart loses
// it, and a reader then sees Recorded false) and is bounded: api.MaxAgentCalls calls
// per run, maxLedgerRuns runs (the oldest run is dropped first). A run's list is
// Recorded (complete) when this process minted the run's token (register). Safe for
// concurrent use.
type callLedger struct {
	mu    sync.Mutex
	runs  map[ledgerKey]*api.AgentCallList
	order []ledgerKey
}

// ledgerKey is a run of a company.
type ledgerKey struct{ company, run string }

// maxLedgerRuns bounds the runs a ledger remembers.
const maxLedgerRuns = 4096

// register starts run's ledger when this process mints its token: from then on every
// call of the run reaches this ledger, so its list is complete (Recorded).
func (l *callLedger) register(company, run string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entry(company, run).Recorded = true
}

// entry returns run's list, creating it (not Recorded) when it is new. l.mu is held.
func (l *callLedger) entry(company, run string) *api.AgentCallList {
	if l.runs == nil {
		l.runs = map[ledgerKey]*api.AgentCallList{}
	}
	k := ledgerKey{company, run}
	list := l.runs[k]
	if list == nil {
		if len(l.order) >= maxLedgerRuns {
			delete(l.runs, l.order[0])
			l.order = l.order[1:]
		}
		list = &api.AgentCallList{RunID: run, Calls: []api.AgentCall{}}
		l.runs[k] = list
		l.order = append(l.order, k)
	}
	return list
}

// record appends one call of run. A run whose token this process did not mint (it was
// minted before a restart) gets a list that is not Recorded: calls before the restart
// were seen by another process.
func (l *callLedger) record(company, run, tool string, class api.AgentCallClass, status int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	list := l.entry(company, run)
	if len(list.Calls) >= api.MaxAgentCalls {
		list.Truncated = true
		return
	}
	list.Calls = append(list.Calls, api.AgentCall{Seq: len(list.Calls) + 1, At: time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		Tool: tool, Class: class, Status: status})
}

// list returns a copy of run's calls (Recorded false and no calls when none was seen).
func (l *callLedger) list(company, run string) api.AgentCallList {
	l.mu.Lock()
	defer l.mu.Unlock()
	list := l.runs[ledgerKey{company, run}]
	if list == nil {
		return api.AgentCallList{RunID: run, Calls: []api.AgentCall{}}
	}
	out := *list
	out.Calls = append([]api.AgentCall(nil), list.Calls...)
	return out
}

// callTool names an agent-API request of route rt in the MCP tools' terms; body is the
// request body (for a command, its kind names the call).
func callTool(rt route, body []byte) (string, api.AgentCallClass) {
	switch rt.pattern {
	case "/api/companies/{company}/runs/{run}/context":
		return "get_task_context", api.CallDiscovery
	case "/api/companies/{company}/runs/{run}/documents":
		return "list_documents", api.CallDiscovery
	case "/api/companies/{company}/commands", "/api/companies/{company}/commands/try":
		var req struct {
			Command struct {
				Kind string `json:"kind"`
			} `json:"command"`
		}
		if json.Unmarshal(body, &req) == nil && req.Command.Kind != "" && len(req.Command.Kind) <= 64 {
			return req.Command.Kind, api.CallCommand
		}
		return "command", api.CallCommand
	case "/api/companies/{company}/files", "/api/companies/{company}/files/{file}/content",
		"/api/companies/{company}/artifacts/{artifact}/content", "/api/companies/{company}/blobs/{sha256}":
		return "read_file", api.CallDiscovery
	case "/api/companies/{company}/blobs":
		return "upload_blob", api.CallFile
	case "/api/companies/{company}/events":
		return "events", api.CallProtocol
	case completePattern:
		return "complete", api.CallProtocol
	case "/api/companies/{company}/session/checkpoint":
		return "checkpoint", api.CallProtocol
	case "/api/companies/{company}/runs/{run}/events":
		return "replay", api.CallProtocol
	}
	return rt.method + " " + rt.pattern, api.CallProtocol
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}
