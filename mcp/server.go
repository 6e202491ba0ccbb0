package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/canonjson"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
)

// ServerName is the MCP implementation name the server announces (and the name the
// CLIs' configurations register it under, so Codex calls its tools
// mcp__agentproof__<tool>).
const ServerName = "agentproof"

// API is what the tools call: the agent API of one company, seen with one run token.
// *client.Company implements it.
type API interface {
	// Context returns the run's context (get_task_context).
	Context(ctx context.Context, runID string) (controlplane.RunContext, error)
	// ApplyCommand applies a semantic command with idempotency (the command tools).
	ApplyCommand(ctx context.Context, env controlplane.CommandEnvelope) (controlplane.CommandResult, error)
	// RunDocuments lists the documents of the run's active task (the document tools).
	RunDocuments(ctx context.Context, runID string) (api.DocumentList, error)
}

var _ API = (*client.Company)(nil)

// Dial returns the agent API at apiURL (".../api/companies/<company>", as the heartbeat
// runner hands it to agents) with the run token. Errors: an URL that does not name one
// company.
func Dial(ctx context.Context, apiURL, token string) (API, error) {
	p, err := client.DialAgent(ctx, apiURL, token)
	if err != nil {
		return nil, err
	}
	co, ok := p.(*client.Company)
	if !ok {
		return nil, fmt.Errorf("mcp: agent API client is a %T, not a *client.Company", p)
	}
	return co, nil
}

// Config is one server's run.
//
//   - RunID: the run every call acts for (required).
//   - RunToken: used only to scrub it from any text a tool returns (optional).
//   - StateDir: the agent's state directory; when set, the presentation (see
//     WritePresentation) is written under it after each presenting call.
//   - Version: announced in the MCP initialize answer.
//   - Logger: one line per tool call (tool, outcome, error code); nil discards. Never
//     the token.
//   - Bind: instead of RunID and RunToken, the run of each call (a warm ACP session's
//     server, docs/acp.md "Warm lifecycle"): called once at the start of every tool
//     call, it returns the run the call acts for, its token and the API seen with that
//     token (see FileBinding). An error refuses the call (no_run_bound when no run is
//     bound now). NewServer's API argument is then unused (nil is fine).
type Config struct {
	RunID    string
	RunToken string
	StateDir string
	Version  string
	Logger   *slog.Logger
	Bind     func(ctx context.Context) (Bound, error)
	// PermissionRelay, when set, is the permission relay socket of the agent's session
	// (session.EnvPermissionRelay): the server then also serves PermissionPromptTool.
	PermissionRelay string
}

// Bound is the run one tool call acts for: its id, its token and the agent API seen
// with that token.
type Bound struct {
	RunID    string
	RunToken string
	API      API
}

// maxAttempts bounds the tries of one command that fails with a retryable error; every
// try sends the same envelope, so the idempotency key makes a retry safe.
const maxAttempts = 4

// NewServer returns the MCP server of cfg's run with every tool of Tools, calling a.
// Serve it with Server.Run on a transport (stdio for `agentproof mcp`).
func NewServer(cfg Config, a API) (*sdk.Server, error) {
	if strings.TrimSpace(cfg.RunID) == "" && cfg.Bind == nil {
		return nil, errors.New("mcp: a run id (or a run binding) is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if _, err := validators(); err != nil {
		return nil, err
	}
	h := &handler{cfg: cfg, api: a, sent: &sentCommands{m: map[string]json.RawMessage{}}}
	s := sdk.NewServer(&sdk.Implementation{Name: ServerName, Version: cfg.Version}, &sdk.ServerOptions{
		Instructions: "Tools of the agentproof control plane for your run's task. Read get_task_context first; " +
			"end your turn with finish_task, request_review or block_task (the summary is your answer to the user).",
	})
	for _, t := range Tools() {
		t := t
		s.AddTool(&sdk.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema,
			Annotations: annotations(t)}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var raw json.RawMessage
			if req != nil && req.Params != nil {
				raw = req.Params.Arguments
			}
			return h.call(ctx, t, raw), nil
		})
	}
	if cfg.PermissionRelay != "" {
		addPermissionPrompt(s, cfg.PermissionRelay, cfg.Logger)
	}
	return s, nil
}

func annotations(t ToolSpec) *sdk.ToolAnnotations {
	if !t.Command {
		return &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
	}
	f := false
	return &sdk.ToolAnnotations{DestructiveHint: &f, IdempotentHint: true, OpenWorldHint: &f}
}

// handler serves the tool calls of one run (cfg.RunID, api), or of the bound run of
// each call (a copy made per call, see call).
type handler struct {
	cfg  Config
	api  API
	sent *sentCommands
}

// sentCommands are the commands first sent under each idempotency key (shared by the
// per-call copies of a handler; the key includes the run id).
type sentCommands struct {
	mu sync.Mutex
	m  map[string]json.RawMessage
}

// call runs one tool call and returns its result; failures are tool errors (isError)
// whose text starts with the error code. With a binding, the call acts for the run
// bound when it starts.
func (h *handler) call(ctx context.Context, t ToolSpec, raw json.RawMessage) *sdk.CallToolResult {
	if h.cfg.Bind != nil {
		b, err := h.cfg.Bind(ctx)
		if err != nil {
			code := "no_run_bound"
			if !errors.Is(err, session.ErrNoRunBound) {
				code = "run_binding_unreadable"
			}
			h.cfg.Logger.Info("tool call failed", "tool", t.Name, "code", code)
			return h.result(true, code+": "+err.Error())
		}
		bound := *h
		bound.cfg.RunID, bound.cfg.RunToken, bound.api = b.RunID, b.RunToken, b.API
		bound.cfg.Bind = nil
		return bound.call(ctx, t, raw)
	}
	out, code, err := h.run(ctx, t, raw)
	if err != nil {
		h.cfg.Logger.Info("tool call failed", "tool", t.Name, "code", code)
		return h.result(true, err.Error())
	}
	h.cfg.Logger.Info("tool call", "tool", t.Name)
	return h.result(false, string(out))
}

func (h *handler) result(isError bool, text string) *sdk.CallToolResult {
	if h.cfg.RunToken != "" {
		text = strings.ReplaceAll(text, h.cfg.RunToken, "[redacted]")
	}
	return &sdk.CallToolResult{IsError: isError, Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}

// toolError is a failure whose text is "<code>: <message>".
type toolError struct{ code, msg string }

func (e *toolError) Error() string { return e.code + ": " + e.msg }

// asToolError maps an API error to its tool error: a control-plane error keeps its code
// and message; anything else (transport) is agent_api_unreachable.
func asToolError(what string, err error) *toolError {
	var ce *controlplane.Error
	if errors.As(err, &ce) {
		msg := ce.Message
		if ce.Retryable {
			msg += " (retryable)"
		}
		return &toolError{code: string(ce.Code), msg: msg}
	}
	return &toolError{code: "agent_api_unreachable", msg: what + ": " + err.Error()}
}

func (h *handler) run(ctx context.Context, t ToolSpec, raw json.RawMessage) ([]byte, string, error) {
	args, err := DecodeArguments(t.Name, raw)
	if err != nil {
		return nil, "invalid_arguments", err
	}
	var out any
	if t.Command {
		out, err = h.command(ctx, t, args)
	} else {
		out, err = h.read(ctx, t, args)
	}
	if err != nil {
		var te *toolError
		if errors.As(err, &te) {
			return nil, te.code, err
		}
		var ae *ArgumentError
		if errors.As(err, &ae) {
			return nil, "invalid_arguments", err
		}
		return nil, "internal", err
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, "internal", fmt.Errorf("internal: encoding the result: %w", err)
	}
	return b, "", nil
}

// IdempotencyKey is the key of one command tool call: "agentproof-mcp/<tool>/<h>", h the
// first 32 hex digits of the SHA-256 of the RFC 8785 encoding of [runID, tool, args]
// (args without present). The same call in the same run — a client's retry — gets the
// same key, so the control plane answers it as a duplicate instead of applying it
// twice; an identical second call (same tool, same arguments) in one run is therefore a
// duplicate too. Errors: args that cannot be encoded.
func IdempotencyKey(runID, tool string, args map[string]any) (string, error) {
	b, err := canonjson.Sorted([]any{runID, tool, args})
	if err != nil {
		return "", err
	}
	return "agentproof-mcp/" + tool + "/" + canonjson.SHA256Hex(b)[:32], nil
}

// CommandResult is what a command tool returns on success: the control plane's result
// plus, for a commenting tool, the comment it created and whether it is the run's
// presented message.
type CommandResult struct {
	controlplane.CommandResult
	CommentID string `json:"commentId,omitempty"`
	Presented bool   `json:"presented,omitempty"`
}

func (h *handler) command(ctx context.Context, t ToolSpec, args map[string]any) (any, error) {
	row, _ := controlplane.LookupCommand(controlplane.CommandKind(t.Name)) // every command tool has a row
	commenting := row.Commenting
	present := row.PresentsByDefault
	if v, ok := args[presentArg].(bool); ok {
		present = v
	}
	delete(args, presentArg)
	key, err := IdempotencyKey(h.cfg.RunID, t.Name, args)
	if err != nil {
		return nil, &toolError{code: "invalid_arguments", msg: err.Error()}
	}
	h.sent.mu.Lock()
	cmd, seen := h.sent.m[key]
	h.sent.mu.Unlock()
	if !seen {
		if cmd, err = h.buildCommand(ctx, t.Name, args); err != nil {
			return nil, err
		}
		h.sent.mu.Lock()
		if prev, ok := h.sent.m[key]; ok {
			cmd = prev
		} else {
			h.sent.m[key] = cmd
		}
		h.sent.mu.Unlock()
	}
	env := controlplane.CommandEnvelope{RunID: h.cfg.RunID, IdempotencyKey: key, Command: cmd}
	var res controlplane.CommandResult
	for attempt := range maxAttempts {
		res, err = h.api.ApplyCommand(ctx, env)
		if err == nil || !controlplane.IsRetryable(err) || attempt == maxAttempts-1 {
			break
		}
		timer := time.NewTimer(time.Duration(attempt+1) * 20 * time.Millisecond)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, asToolError("applying "+t.Name, errors.Join(err, ctx.Err()))
		case <-timer.C:
		}
	}
	if err != nil {
		var ce *controlplane.Error
		if errors.As(err, &ce) && !ce.Retryable {
			// Refused: the control plane recorded nothing under the key, so an identical
			// later call may resolve its conventions afresh.
			h.sent.mu.Lock()
			delete(h.sent.m, key)
			h.sent.mu.Unlock()
		}
		return nil, asToolError("applying "+t.Name, err)
	}
	out := CommandResult{CommandResult: res}
	if commenting {
		out.CommentID = res.Ref("comment")
		if present && out.CommentID != "" {
			out.Presented = true
			text, _ := args[row.MessageArg].(string)
			if err := h.present(t.Name, out.CommentID, text); err != nil {
				return nil, &toolError{code: "presentation_not_recorded", msg: err.Error()}
			}
		}
	}
	return out, nil
}

// present records the presentation comment of the run (see WritePresentation).
func (h *handler) present(tool, commentID, text string) error {
	if h.cfg.StateDir == "" {
		return nil
	}
	return agent.WritePresentation(h.cfg.StateDir, agent.PresentationRecord{RunID: h.cfg.RunID, CommentID: commentID, Tool: tool, Text: text})
}

// buildCommand turns validated arguments into the command JSON, resolving the two
// conventions the reference agent also uses: write_document without baseRevisionId
// writes on top of the document's latest revision (null when the document is new), and
// the targetDocumentKey of request_human_input and request_approval becomes that
// document's latest revision id.
func (h *handler) buildCommand(ctx context.Context, kind string, args map[string]any) (json.RawMessage, error) {
	cmd := make(map[string]any, len(args)+1)
	for k, v := range args {
		cmd[k] = v
	}
	cmd["kind"] = kind
	switch controlplane.CommandKind(kind) {
	case controlplane.CommandWriteDocument:
		if _, ok := cmd["baseRevisionId"]; !ok {
			doc, err := h.document(ctx, args["key"].(string))
			if err != nil {
				return nil, err
			}
			if doc != nil {
				cmd["baseRevisionId"] = doc.LatestRevisionID
			} else {
				cmd["baseRevisionId"] = nil
			}
		}
	case controlplane.CommandRequestHumanInput, controlplane.CommandRequestApproval:
		if key, ok := cmd["targetDocumentKey"].(string); ok {
			if _, both := cmd["targetRevisionId"]; both {
				return nil, &ArgumentError{Tool: kind, Problems: []string{"give targetRevisionId or targetDocumentKey, not both"}}
			}
			delete(cmd, "targetDocumentKey")
			doc, err := h.document(ctx, key)
			if err != nil {
				return nil, err
			}
			if doc == nil {
				return nil, &toolError{code: "document_missing", msg: fmt.Sprintf("no document with key %q on this task (write_document first)", key)}
			}
			cmd["targetRevisionId"] = doc.LatestRevisionID
		}
	}
	b, err := json.Marshal(cmd)
	if err != nil {
		return nil, &toolError{code: "invalid_arguments", msg: err.Error()}
	}
	return b, nil
}

// document returns the document with key on the run's task, or nil.
func (h *handler) document(ctx context.Context, key string) (*controlplane.Document, error) {
	list, err := h.api.RunDocuments(ctx, h.cfg.RunID)
	if err != nil {
		return nil, asToolError("listing documents", err)
	}
	for _, d := range list.Documents {
		if d != nil && d.Key == key {
			return d, nil
		}
	}
	return nil, nil
}

// DocumentSummary is one entry of list_documents.
type DocumentSummary struct {
	Key              string `json:"key"`
	Title            string `json:"title"`
	DocumentID       string `json:"documentId"`
	LatestRevisionID string `json:"latestRevisionId"`
	Revisions        int    `json:"revisions"`
}

// DocumentRevision is what read_document returns.
type DocumentRevision struct {
	Key           string  `json:"key"`
	Title         string  `json:"title"`
	DocumentID    string  `json:"documentId"`
	RevisionID    string  `json:"revisionId"`
	Revision      int     `json:"revision"`
	Latest        bool    `json:"latest"`
	Body          string  `json:"body"`
	ChangeSummary *string `json:"changeSummary"`
}

func (h *handler) read(ctx context.Context, t ToolSpec, args map[string]any) (any, error) {
	switch t.Name {
	case ToolGetTaskContext:
		rc, err := h.api.Context(ctx, h.cfg.RunID)
		if err != nil {
			return nil, asToolError("reading the run context", err)
		}
		return rc, nil
	case ToolListDocuments:
		list, err := h.api.RunDocuments(ctx, h.cfg.RunID)
		if err != nil {
			return nil, asToolError("listing documents", err)
		}
		out := struct {
			TaskID    string            `json:"taskId"`
			Documents []DocumentSummary `json:"documents"`
		}{TaskID: list.TaskID, Documents: []DocumentSummary{}}
		for _, d := range list.Documents {
			if d != nil {
				out.Documents = append(out.Documents, DocumentSummary{Key: d.Key, Title: d.Title, DocumentID: d.ID,
					LatestRevisionID: d.LatestRevisionID, Revisions: len(d.Revisions)})
			}
		}
		return out, nil
	case ToolReadDocument:
		key := args["key"].(string)
		doc, err := h.document(ctx, key)
		if err != nil {
			return nil, err
		}
		if doc == nil || len(doc.Revisions) == 0 {
			return nil, &toolError{code: "document_missing", msg: fmt.Sprintf("no document with key %q on this task", key)}
		}
		n := len(doc.Revisions)
		if v, ok := args["revision"].(json.Number); ok {
			i, err := v.Int64()
			if err != nil || i < 1 || i > int64(len(doc.Revisions)) {
				return nil, &toolError{code: "revision_missing", msg: fmt.Sprintf("document %q has revisions 1 to %d", key, len(doc.Revisions))}
			}
			n = int(i)
		}
		rev := doc.Revisions[n-1]
		return DocumentRevision{Key: doc.Key, Title: doc.Title, DocumentID: doc.ID, RevisionID: rev.ID, Revision: rev.Revision,
			Latest: rev.ID == doc.LatestRevisionID, Body: rev.Body, ChangeSummary: rev.ChangeSummary}, nil
	}
	return nil, &toolError{code: "internal", msg: "unknown read tool " + t.Name}
}
