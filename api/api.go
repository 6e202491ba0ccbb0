// Package api holds the wire types of the control-plane HTTP API shared by
// package server (which serves them) and package client (which speaks them). Board
// routes live under /api/companies; agent routes under /api/companies/{company}/…
// take a per-run agent token. Every error body is Error.
package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"

	"github.com/agentproof/agentproof/controlplane"
)

// Request limits of every route.
const (
	// MaxBodyBytes bounds every request body (bytes); a larger body is refused with 413
	// and code request_too_large.
	MaxBodyBytes = 1 << 20
	// MaxBodyDepth bounds how deep the objects and arrays of a request body nest
	// (levels); a deeper body is refused with 400 invalid_request naming the path.
	MaxBodyDepth = 128
	// MaxIdempotencyKeyBytes bounds idempotency and deduplication keys (bytes):
	// idempotencyKey of a command, cancellationRequestId of a Stop, callerDedupeKey and
	// callerResultId of a completion, eventId and sourceEventId of an event, and the
	// Idempotency-Key header of a board write (controlplane.MaxIdempotencyKeyBytes). A
	// longer key is refused with 400 invalid_request naming the field.
	MaxIdempotencyKeyBytes = controlplane.MaxIdempotencyKeyBytes
	// MaxFileBytes bounds the raw body of a blob upload (bytes), instead of
	// MaxBodyBytes (controlplane.MaxFileBytes, 32 MiB).
	MaxFileBytes = controlplane.MaxFileBytes
)

// IdempotencyKeyHeader is the header a board write carries its idempotency key in (at
// most MaxIdempotencyKeyBytes bytes): the key and the committed response are stored
// with the write, and a replay with the same key returns that response (same ids, same
// status); the same key with a different request is 409 idempotency_conflict. Routes
// that take no key refuse the header (400 idempotency_key_invalid), and so do agent
// tokens.
const IdempotencyKeyHeader = "Idempotency-Key"

// Error is every error body: the state machine's {code, message, retryable}, or one of
// the transport codes invalid_request (400: malformed JSON, unknown fields, text that
// is not valid UTF-8 or holds NUL, nesting deeper than MaxBodyDepth, a key longer than
// MaxIdempotencyKeyBytes, a timestamp that is not RFC 3339; the message names the
// field), unauthorized (401: no token, a token that is not valid, or the agent token of
// a run that ended), forbidden (403), not_found / company_missing (404),
// request_timeout (408), request_too_large (413), secret_ref_required (400).
type Error = controlplane.Error

// CreateCompanyRequest creates a company. With State (a serialized control-plane state,
// tag paperclip.capability.mock-state.v1) it is a fixture company that keeps the
// state's own ids; otherwise Name and IssuePrefix are required and the company starts
// bare (no actors, no tasks) with its instance-managed local environment.
type CreateCompanyRequest struct {
	Name        string          `json:"name,omitempty"`
	IssuePrefix string          `json:"issuePrefix,omitempty"`
	State       json.RawMessage `json:"state,omitempty"`
}

// Company identifies a company of the instance. LocalEnvironmentID is the id of the
// local environment a board company is created with, in the answer of its creation
// only ("" otherwise: a company restored from a state, the company list), so that a
// caller need not read the state to find it.
type Company struct {
	ID                 string `json:"id"`
	LocalEnvironmentID string `json:"localEnvironmentId,omitempty"`
}

// CompanyList lists the instance's companies in creation order.
type CompanyList struct {
	Companies []Company `json:"companies"`
}

// CreateSecretRequest stores a secret value: Name is a label, Key the credential it
// fills (for example OPENAI_API_KEY), Kind what the value is (SecretKindEnv when
// empty). The value is never returned.
type CreateSecretRequest struct {
	Name  string     `json:"name"`
	Key   string     `json:"key"`
	Value string     `json:"value"`
	Kind  SecretKind `json:"kind,omitempty"`
}

// SecretKind is what a stored secret's value is (docs/secrets.md "Login files").
type SecretKind string

// Secret kinds.
const (
	// SecretKindEnv is a value the heartbeat runner binds to an agent's environment
	// variable (an API key); the default.
	SecretKindEnv SecretKind = "env"
	// SecretKindLoginFile is a CLI's login file (for example a subscription's
	// auth.json): it is seeded into a company-scoped HOME (package loginfile) and never
	// resolved into an agent's environment or configuration.
	SecretKindLoginFile SecretKind = "login_file"
)

// MaxLoginFileBytes bounds a login_file secret's value (bytes).
const MaxLoginFileBytes = 64 << 10

// SecretRefType is the Type of a SecretRef.
const SecretRefType = "secret_ref"

// SecretRef references a stored secret: {type: "secret_ref", secretId, version:
// "latest"}. It is the only form a credential may take in agent and environment
// payloads.
type SecretRef struct {
	Type     string `json:"type"`
	SecretID string `json:"secretId"`
	Version  string `json:"version"`
}

// CreateAgentRequest is board operation create_agent; AdapterConfig holds credentials
// as SecretRefs only.
type CreateAgentRequest struct {
	Name             string          `json:"name"`
	Role             string          `json:"role"`
	CapabilityGrants []string        `json:"capabilityGrants,omitempty"`
	AdapterConfig    json.RawMessage `json:"adapterConfig,omitempty"`
	BudgetCents      *int64          `json:"budgetCents,omitempty"`
}

// CreateProjectRequest is board operation create_project.
type CreateProjectRequest struct {
	Name        string  `json:"name"`
	Description *string `json:"description,omitempty"`
}

// CreateEnvironmentRequest is board operation create_environment; Config holds
// credentials as SecretRefs only. Kind "local" is instance-managed (one per company,
// created with a board company; a second is 409 environment_conflict).
type CreateEnvironmentRequest struct {
	Name   string          `json:"name"`
	Kind   string          `json:"kind"`
	Config json.RawMessage `json:"config,omitempty"`
}

// CreateIssueRequest is board operation create_issue; an assignee gets an
// issue_assigned wake.
type CreateIssueRequest struct {
	Title           string                   `json:"title"`
	Description     *string                  `json:"description,omitempty"`
	WorkMode        *string                  `json:"workMode,omitempty"`
	Priority        *string                  `json:"priority,omitempty"`
	AssigneeActorID *string                  `json:"assigneeActorId,omitempty"`
	ParentID        *string                  `json:"parentId,omitempty"`
	Status          *controlplane.TaskStatus `json:"status,omitempty"`
}

// CommentRequest is board operation comment (the issue is in the path); the assignee
// gets an issue_commented wake.
type CommentRequest struct {
	Body string `json:"body"`
}

// ResolveInteractionRequest is board operation resolve_interaction (the interaction is
// in the path): Outcome accepted, rejected (also a revision request) or expired, or
// answered for questions.
type ResolveInteractionRequest struct {
	Outcome controlplane.InteractionStatus `json:"outcome"`
	Result  json.RawMessage                `json:"result,omitempty"`
}

// DecideApprovalRequest is board operation decide_approval (the approval is in the
// path): Decision approved, rejected or cancelled; Note is required.
type DecideApprovalRequest struct {
	Decision controlplane.ApprovalStatus `json:"decision"`
	Note     string                      `json:"note"`
}

// BoardResult answers every board operation.
type BoardResult = controlplane.BoardResult

// CommandRequest carries a semantic command. Command is its JSON object; CommandText
// carries a command that is not valid JSON (so that the state machine, not the
// transport, rejects it) and is exclusive with Command.
type CommandRequest struct {
	RunID            string          `json:"runId"`
	IdempotencyKey   string          `json:"idempotencyKey"`
	ExpectedRevision *int64          `json:"expectedRevision,omitempty"`
	Command          json.RawMessage `json:"command,omitempty"`
	CommandText      *string         `json:"commandText,omitempty"`
}

// DocumentList is the answer of GET /api/companies/{company}/runs/{run}/documents: the
// documents of the run's active task TaskID, in creation order, each with every revision
// (oldest first). An agent token reads its own run's list only.
type DocumentList struct {
	TaskID    string                   `json:"taskId"`
	Documents []*controlplane.Document `json:"documents"`
}

// CreateConversationRequest is board operation create_conversation: an agent chat
// with the agent AssigneeActorID (its backing task is left out of IssueList); Body,
// when given, is the first human message, which wakes the agent.
type CreateConversationRequest struct {
	Title           string  `json:"title"`
	AssigneeActorID string  `json:"assigneeActorId"`
	Body            *string `json:"body,omitempty"`
}

// ChatMessageRequest is board operation chat_message (the conversation is in the
// path): a human message that wakes the agent, or "/new" (controlplane.ChatNewText),
// which starts a new session generation and wakes nobody.
type ChatMessageRequest struct {
	Body string `json:"body"`
}

// IssueList lists a company's issues in creation order: every task but the
// conversations' backing tasks (controlplane.Issues).
type IssueList struct {
	Issues []*controlplane.Task `json:"issues"`
}

// WakeList lists scheduled wakes, oldest first.
type WakeList struct {
	Wakes []controlplane.ScheduledWake `json:"wakes"`
}

// DecisionList lists decision records, oldest first.
type DecisionList struct {
	Decisions []controlplane.Decision `json:"decisions"`
}

// Checkpoint is a session checkpoint (null when none).
type Checkpoint struct {
	Checkpoint json.RawMessage `json:"checkpoint"`
}

// Ready is the line `agentproof serve` prints on stdout when it accepts requests.
type Ready struct {
	Addr string `json:"addr"`
	PID  int    `json:"pid"`
}

// Instance home files that hold the instance's own generated secrets (package server
// creates them 0600 on first start; the harness reads them to add them to an attempt's
// secret set).
const (
	// BoardTokenFile holds the board token (64 hex digits).
	BoardTokenFile = "board.token"
	// MasterKeyFile holds the master key that seals secrets (32 raw bytes).
	MasterKeyFile = "master.key"
)

// RunTokenKey derives the HMAC-SHA256 key of run (agent) tokens from an instance's
// master key: HMAC-SHA256(master, "agentproof agent tokens v1"), 32 bytes. The server
// signs run tokens with it; the harness derives it to keep it out of every result.
func RunTokenKey(master []byte) []byte {
	mac := hmac.New(sha256.New, master)
	mac.Write([]byte("agentproof agent tokens v1"))
	return mac.Sum(nil)
}

// AgentCallClass says what kind of agent-API request an AgentCall was.
type AgentCallClass string

// Classes of agent calls.
const (
	// CallDiscovery is a read of the run's task, documents or files.
	CallDiscovery AgentCallClass = "discovery"
	// CallCommand is a semantic command (POST commands or commands/try), applied or
	// refused.
	CallCommand AgentCallClass = "command"
	// CallFile is an upload of bytes (POST blobs).
	CallFile AgentCallClass = "file"
	// CallProtocol is the run protocol itself (events, completion, session
	// checkpoints, replay): not a tool call.
	CallProtocol AgentCallClass = "protocol"
)

// AgentCall is one request an agent token made to the agent API, as the server saw it
// (docs/journeys.md "Task titles": the first-five tool-call bound counts
// calls in the initial provider run, including discovery). Seq is 1-based within the
// run; At is the server's wall time (RFC 3339, ms); Tool names the request in the MCP
// tools' terms (get_task_context, list_documents, a command kind such as
// set_task_title, read_file, upload_blob, or the protocol route: events, complete,
// checkpoint, replay); Status is the HTTP status answered.
type AgentCall struct {
	Seq    int            `json:"seq"`
	At     string         `json:"at"`
	Tool   string         `json:"tool"`
	Class  AgentCallClass `json:"class"`
	Status int            `json:"status"`
}

// AgentCallList is the answer of GET /api/companies/{company}/runs/{run}/calls (board
// token): the run's agent calls in order. The ledger lives in the serving process and
// starts when the process mints the run's agent token: Recorded says the list is
// complete from then on (false for a run this process did not mint a token for, for
// example one opened before a restart, whose earlier calls are lost), and keeps
// at most MaxAgentCalls calls per run (Truncated: later calls were not kept).
type AgentCallList struct {
	RunID     string      `json:"runId"`
	Recorded  bool        `json:"recorded"`
	Truncated bool        `json:"truncated"`
	Calls     []AgentCall `json:"calls"`
}

// MaxAgentCalls bounds the calls an AgentCallList keeps per run.
const MaxAgentCalls = 1000
