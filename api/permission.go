package api

// Permission interactions (docs/acp.md "Permissions on the board"): when an ACP agent
// asks session/request_permission, the heartbeat runner opens a permission interaction
// on the board, waits for the human's answer and delivers it to the agent. The board
// lists them (GET /api/companies/{company}/permissions) and answers them (POST
// /api/companies/{company}/permissions/{permission}/decision). They are the runner's
// records beside its run records, not part of the control-plane state machine: a permission
// is asked in the middle of a turn and answered within it, so it neither moves the task
// to review nor schedules a wake.

// PermissionSchema tags a Permission.
const PermissionSchema = "agentproof.permission/v1"

// PermissionStatus is Permission.Status.
type PermissionStatus string

// Permission statuses: pending until the human answers, then approved or declined;
// cancelled when the run was stopped while it was pending, or the turn or session
// ended first (the agent was told "cancelled"; the human's answer was never given).
const (
	PermissionPending   PermissionStatus = "pending"
	PermissionApproved  PermissionStatus = "approved"
	PermissionDeclined  PermissionStatus = "declined"
	PermissionCancelled PermissionStatus = "cancelled"
)

// PermissionDecisionKind is what the human answers (PermissionDecisionRequest.Decision).
type PermissionDecisionKind string

// The human's answers: approve selects the agent's allow-once option (else its
// allow-always option), decline its reject-once option (else reject-always).
const (
	PermissionApprove PermissionDecisionKind = "approve"
	PermissionDecline PermissionDecisionKind = "decline"
)

// ToolKind is the kind of the tool call a permission asks for (Permission.Kind), as the
// agent sent it: ACP's ToolKind (read, edit, delete, move, search, execute, think,
// fetch, switch_mode, other).
type ToolKind string

// The tool kinds that can change the workspace: a file edit, deletion or move, and a
// command (execute), which may write anything.
const (
	ToolKindEdit    ToolKind = "edit"
	ToolKindDelete  ToolKind = "delete"
	ToolKindMove    ToolKind = "move"
	ToolKindExecute ToolKind = "execute"
)

// Mutates reports whether a tool call of kind k can change the workspace (edit,
// delete, move, execute). Every other kind — read, search, think, fetch, switch_mode
// and other, the kind agents give the semantic tools of an MCP server — cannot by
// itself.
func (k ToolKind) Mutates() bool {
	return k == ToolKindEdit || k == ToolKindDelete || k == ToolKindMove || k == ToolKindExecute
}

// PermissionOption is one answer the agent offered: its id, label and kind
// (allow_once, allow_always, reject_once, reject_always).
type PermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

// Permission is one permission interaction (the permission card): the run, task and
// agent that asked, the request's sequence number in its ACP session (1-based) and
// turn, the tool call (id, title, kind such as edit or execute, the file locations as
// the agent sent them), the options offered, its status, the option delivered to the
// agent (OptionID, "" for cancelled), who closed it (ResolvedBy: the board actor, or
// "runner" when it was cancelled) and why it was cancelled (Reason), and the times
// (RFC 3339 UTC, µs).
type Permission struct {
	Schema     string             `json:"schema"`
	ID         string             `json:"id"`
	CompanyID  string             `json:"companyId"`
	TaskID     string             `json:"taskId"`
	RunID      string             `json:"runId"`
	ActorID    string             `json:"actorId"`
	Seq        int                `json:"seq"`
	Turn       int                `json:"turn"`
	ToolCallID string             `json:"toolCallId"`
	Title      string             `json:"title,omitempty"`
	Kind       string             `json:"kind,omitempty"`
	Locations  []string           `json:"locations,omitempty"`
	Options    []PermissionOption `json:"options"`
	Status     PermissionStatus   `json:"status"`
	OptionID   string             `json:"optionId,omitempty"`
	ResolvedBy string             `json:"resolvedBy,omitempty"`
	Reason     string             `json:"reason,omitempty"`
	CreatedAt  string             `json:"createdAt"`
	ResolvedAt string             `json:"resolvedAt,omitempty"`
}

// OptionFor returns the id of the option p offers for decision: approve takes an
// allow_once option, else allow_always; decline a reject_once option, else
// reject_always. ok is false when p offers none of those kinds (a request the human
// cannot answer that way) or decision is neither approve nor decline.
func (p Permission) OptionFor(decision PermissionDecisionKind) (id string, ok bool) {
	var kinds []string
	switch decision {
	case PermissionApprove:
		kinds = []string{"allow_once", "allow_always"}
	case PermissionDecline:
		kinds = []string{"reject_once", "reject_always"}
	}
	for _, k := range kinds {
		for _, o := range p.Options {
			if o.Kind == k {
				return o.OptionID, true
			}
		}
	}
	return "", false
}

// PermissionList is the body of GET /api/companies/{company}/permissions: the
// company's permission interactions in the order they were asked.
type PermissionList struct {
	Permissions []Permission `json:"permissions"`
}

// PermissionDecisionRequest is the body of POST
// /api/companies/{company}/permissions/{permission}/decision.
type PermissionDecisionRequest struct {
	Decision PermissionDecisionKind `json:"decision"`
}
