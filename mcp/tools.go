package mcp

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/controlplane"
)

// Tool names: one per agent-facing semantic command (the rows of controlplane.Commands with Tool set, named by their kind) plus the read tools. CLIs prefix them themselves (Codex
// calls finish_task "mcp__agentproof__finish_task").
const (
	ToolGetTaskContext = "get_task_context"
	ToolListDocuments  = "list_documents"
	ToolReadDocument   = "read_document"
)

// ReadTools are the tools that read and change nothing.
var ReadTools = []string{ToolGetTaskContext, ToolListDocuments, ToolReadDocument}

// presentArg is the tool-only argument of the commenting tools
// (controlplane.CommandSpec.Commenting): whether the comment the call creates is the
// run's user-facing message. It is not sent to the control plane. The tools that end a
// turn (CommandSpec.PresentsByDefault) present unless the call says present: false;
// report_progress presents only when asked.
const presentArg = "present"

// Bounds of the argument schemas (characters for strings, items for arrays). They are
// stricter than the control plane where the control plane has no bound, so that a
// runaway model gets a tool error naming the argument instead of a giant comment.
const (
	maxIDChars       = 128    // ids; server path ids are at most 128 characters too
	maxTitleChars    = 500    // titles, names, types, file names
	maxTextChars     = 12000  // comments, summaries, prompts; = the PRP result summary bound
	maxDocChars      = 200000 // document bodies
	maxSkillChars    = 100000 // skill markdown
	maxURLChars      = 2048
	maxListItems     = 50
	maxDelayTicks    = 31536000 // one year of 1-second ticks
	maxSafeInteger   = 9007199254740991
	maxStatusVersion = 1<<31 - 1
	// maxInlineBase64Chars is the base64 length of controlplane.MaxInlineContentBytes.
	maxInlineBase64Chars = (controlplane.MaxInlineContentBytes + 2) / 3 * 4
)

// Enumerations of closed command fields (docs/control-plane.md).
var (
	interactionKinds    = names(controlplane.InteractionKinds)
	continuationPolices = names(controlplane.ContinuationPolicies)
	taskPriorities      = controlplane.TaskPriorities
	createTaskStatuses  = names([]controlplane.TaskStatus{controlplane.TaskBacklog, controlplane.TaskTodo})
	approvalDecisions   = names(controlplane.ApprovalDecisions)
	serviceActions      = controlplane.ServiceActions
	wakeReasons         = names(controlplane.ScheduleWakeReasons)
)

// names spells a control-plane vocabulary as schema enum values.
func names[S ~string](values []S) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

type schema = map[string]any

func str(minLen, maxLen int, desc string) schema {
	s := schema{"type": "string", "maxLength": maxLen, "description": desc}
	if minLen > 0 {
		s["minLength"] = minLen
	}
	return s
}

func enum(values []string, desc string) schema {
	return schema{"type": "string", "enum": slices.Clone(values), "description": desc}
}

func integer(maxV int64, desc string) schema {
	return schema{"type": "integer", "minimum": 0, "maximum": maxV, "description": desc}
}

func ids(minItems int, desc string) schema {
	s := schema{"type": "array", "items": str(1, maxIDChars, "a task id"), "maxItems": maxListItems, "description": desc}
	if minItems > 0 {
		s["minItems"] = minItems
	}
	return s
}

func object(desc string) schema {
	return schema{"type": "object", "description": desc}
}

// fieldSchemas are the argument schemas shared by every tool that has the argument;
// toolFieldSchemas override them per tool. Every schema is in the subset every MCP
// client accepts: one "type" string, no $ref, no oneOf/anyOf/allOf,
// no null type, no format.
var fieldSchemas = map[string]schema{
	"body":                    str(1, maxTextChars, "the comment text"),
	"summary":                 str(1, maxTextChars, "what was done, for the user (becomes a comment on the task)"),
	"reason":                  str(1, maxTextChars, "why, for the user (becomes a comment on the task)"),
	"title":                   str(1, maxTitleChars, "a short title"),
	"key":                     str(1, maxIDChars, "the document key, unique per task, e.g. plan"),
	"baseRevisionId":          str(1, maxIDChars, "the revision this write replaces (optimistic concurrency); omit to write on top of the latest revision, or to create the document"),
	"changeSummary":           str(0, maxTitleChars, "what changed in this revision"),
	"interactionKind":         enum(interactionKinds, "the kind of question"),
	"prompt":                  str(1, maxTextChars, "the question or request for the human"),
	"payload":                 object("structured details (a JSON object)"),
	"targetRevisionId":        str(1, maxIDChars, "a document revision the question is about (must be the latest)"),
	"targetDocumentKey":       str(1, maxIDChars, "the key of a document of this task; the question is about its latest revision (alternative to targetRevisionId)"),
	"continuationPolicy":      enum(continuationPolices, "whether resolving the question wakes the task's assignee"),
	"filename":                str(1, controlplane.MaxFilePathBytes, "the deliverable's file name: a relative, clean path such as report.md or out/summary.txt (no leading /, no . or .. segment, no control character)"),
	"contentType":             str(1, maxTitleChars, "its media type, e.g. text/plain"),
	"byteSize":                integer(maxSafeInteger, "its size in bytes"),
	"sha256":                  {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "its SHA-256, 64 lower-case hex digits"},
	"contentRef":              str(1, maxURLChars, "the stored bytes' reference: sha256:<sha256> of this deliverable (the default; leave it out)"),
	"contentBase64":           str(0, maxInlineBase64Chars, "the file's bytes in standard base64 (at most 512 KiB decoded); sha256 and byteSize must be theirs"),
	"targetTaskId":            str(1, maxIDChars, "the task to reassign (not the run's own task)"),
	"assigneeActorId":         str(1, maxIDChars, "the actor id of the assignee"),
	"expectedAssigneeActorId": str(1, maxIDChars, "the assignee you observed; omit when the task was unassigned"),
	"expectedStatusVersion":   integer(maxStatusVersion, "the task statusVersion you observed"),
	"blockedByTaskIds":        ids(0, "ids of tasks that must be done first"),
	"description":             str(0, maxTextChars, "a longer description"),
	"priority":                enum(taskPriorities, "the task priority (default medium)"),
	"status":                  enum(createTaskStatuses, "the initial status (default todo; backlog holds the task)"),
	"approvalType":            str(1, maxTitleChars, "what kind of approval, e.g. deploy"),
	"approvalId":              str(1, maxIDChars, "the approval id"),
	"decision":                enum(approvalDecisions, "the decision"),
	"note":                    str(1, maxTextChars, "the reason for the decision"),
	"serviceId":               str(1, maxIDChars, "the workspace service id"),
	"action":                  enum(serviceActions, "what to do with the service"),
	"url":                     str(1, maxURLChars, "the service URL once started"),
	"delayTicks":              integer(maxDelayTicks, "delay before the wake, in seconds (ticks)"),
	"name":                    {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$", "maxLength": 64, "description": "the skill name: lower-case words joined by hyphens; equals the frontmatter name"},
	"slug":                    {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$", "maxLength": 64, "description": "must equal name when given"},
	"markdown":                str(1, maxSkillChars, "the SKILL.md text: a --- frontmatter block with name and description, then a non-blank body"),
	presentArg:                {"type": "boolean", "description": "whether this comment is the run's user-facing message"},
}

// toolFieldSchemas override fieldSchemas for one tool's argument.
var toolFieldSchemas = map[string]map[string]schema{
	"report_progress":      {"body": str(1, maxTextChars, "the progress note (becomes a comment on the task)")},
	"write_document":       {"body": str(0, maxDocChars, "the full markdown body of the new revision"), "title": str(1, maxTitleChars, "the document title")},
	"request_human_input":  {"title": str(1, maxTitleChars, "a short title of the question")},
	"register_deliverable": {"title": str(1, maxTitleChars, "the work product title")},
	"reassign_task":        {"reason": str(1, maxTextChars, "why (becomes a comment on the reassigned task)")},
	"set_dependencies":     {"blockedByTaskIds": ids(0, "ids of tasks that must be done first; the list replaces the current one, empty clears it")},
	"create_task":          {"title": str(1, maxTitleChars, "the subtask title"), "assigneeActorId": str(1, maxIDChars, "the actor to assign it to")},
	"request_approval": {"payload": object("what is to be approved (a JSON object)"),
		"targetRevisionId":  str(1, maxIDChars, "a document revision to be approved, e.g. your plan's (must be the latest)"),
		"targetDocumentKey": str(1, maxIDChars, "the key of a document of this task, e.g. plan; its latest revision is what is to be approved (alternative to targetRevisionId)")},
	"comment_on_approval": {"body": str(1, maxTextChars, "the comment text")},
	"create_skill":        {"description": str(1, maxTitleChars, "one line; equals the frontmatter description")},
	"schedule_wake":       {"reason": enum(wakeReasons, "the wake reason"), "payload": object("details handed to the woken run (a JSON object)")},
	"block_task":          {"reason": str(1, maxTextChars, "what blocks the task, for the user (becomes a comment)")},
	"post_chat_reply":     {"body": str(1, maxTextChars, "your reply to the human, as they will read it")},
	"handoff_conversation": {"title": str(1, maxTitleChars, "the title of the task to create"),
		"plan":            str(0, maxTextChars, "the task's plan in markdown (numbered steps), saved as its plan document before the assignee starts"),
		"assigneeActorId": str(1, maxIDChars, "the actor id of the assignee (from the conversation's actors)"),
		"assigneeName":    str(1, maxTitleChars, "the exact name of the assignee (from the conversation's actors), instead of assigneeActorId"),
		"message":         str(1, maxTextChars, "what to tell the human in the chat about the handoff")},
}

// readToolDescriptions teach the model what each read tool does (the command tools'
// descriptions are the command table's, controlplane.CommandSpec.Description).
var readToolDescriptions = map[string]string{
	ToolGetTaskContext: "Read your run's context: your task (id, title, description, status, statusVersion), its ancestors, the company, your actor, the wake that started this run, your capabilities, the budget and the results of resolved questions; in a chat run also the conversation: its current messages and the actors you may hand work off to.",
	ToolListDocuments:  "List the documents of your task: key, title, latest revision id and number of revisions.",
	ToolReadDocument:   "Read a document of your task: the latest revision, or the given revision number.",
}

// readToolArgs are the read tools' arguments: required, optional.
var readToolArgs = map[string][2][]string{
	ToolGetTaskContext: {nil, nil},
	ToolListDocuments:  {nil, nil},
	ToolReadDocument:   {{"key"}, {"revision"}},
}

var readFieldSchemas = map[string]schema{
	"revision": {"type": "integer", "minimum": 1, "maximum": maxStatusVersion, "description": "the 1-based revision number (default: the latest)"},
}

// ToolSpec is one tool: its name, whether it applies a semantic command, its description,
// its argument names (required and optional, in declaration order) and its input schema
// (a JSON object schema: type, properties, required).
type ToolSpec struct {
	Name        string
	Command     bool
	Description string
	Required    []string
	Optional    []string
	InputSchema map[string]any
}

// Tools returns every tool in a fixed order: the command tools (the agent-facing rows of
// controlplane.Commands, in its order), then the read tools. A command tool's name,
// description and argument names are its table row's (plus present on the commenting
// tools). It panics if a command has an argument without a schema (a programming error
// caught by the tests).
func Tools() []ToolSpec {
	var out []ToolSpec
	for _, c := range commandTools() {
		kind := string(c.Kind)
		opt := c.Optional
		if c.Commenting {
			opt = append(opt, presentArg)
		}
		out = append(out, spec(kind, true, c.Description, c.Required, opt, func(arg string) schema {
			if s, ok := toolFieldSchemas[kind][arg]; ok {
				return s
			}
			return fieldSchemas[arg]
		}))
	}
	for _, name := range ReadTools {
		a := readToolArgs[name]
		out = append(out, spec(name, false, readToolDescriptions[name], a[0], a[1], func(arg string) schema {
			if s, ok := readFieldSchemas[arg]; ok {
				return s
			}
			return fieldSchemas[arg]
		}))
	}
	return out
}

func spec(name string, command bool, description string, req, opt []string, field func(string) schema) ToolSpec {
	props := schema{}
	for _, arg := range append(slices.Clone(req), opt...) {
		s := field(arg)
		if s == nil {
			panic(fmt.Sprintf("mcp: tool %s argument %s has no schema", name, arg))
		}
		props[arg] = withBoundsDescribed(s)
	}
	required := slices.Clone(req)
	if required == nil {
		required = []string{}
	}
	return ToolSpec{
		Name: name, Command: command, Description: description, Required: req, Optional: opt,
		InputSchema: schema{"type": "object", "properties": props, "required": required},
	}
}

// withBoundsDescribed returns a copy of s whose description also states its bounds in
// words, in brackets ("[not empty, at most 12000 characters]", "[matching ^...$]",
// "[at most 50 items]", "[an integer from 0 to 31536000]"):
// Codex passes the model only type, enum, items, properties, required and description
// (it drops maxLength, pattern, maxItems, minimum and maximum — observed with Codex
// 0.171), so the words are what the model sees of a bound; the
// server still enforces the keywords.
func withBoundsDescribed(s schema) schema {
	out := maps.Clone(s)
	var words []string
	if v, ok := s["minLength"]; ok {
		if v == 1 {
			words = append(words, "not empty")
		} else {
			words = append(words, fmt.Sprintf("at least %v characters", v))
		}
	}
	if v, ok := s["maxLength"]; ok {
		words = append(words, fmt.Sprintf("at most %v characters", v))
	}
	if v, ok := s["pattern"]; ok {
		words = append(words, fmt.Sprintf("matching %v", v))
	}
	if v, ok := s["minItems"]; ok {
		words = append(words, fmt.Sprintf("at least %v items", v))
	}
	if v, ok := s["maxItems"]; ok {
		words = append(words, fmt.Sprintf("at most %v items", v))
	}
	lo, hasLo := s["minimum"]
	hi, hasHi := s["maximum"]
	if hasLo && hasHi {
		words = append(words, fmt.Sprintf("an integer from %v to %v", lo, hi))
	}
	if items, ok := s["items"].(schema); ok {
		out["items"] = withBoundsDescribed(items)
	}
	if len(words) > 0 {
		out["description"] = fmt.Sprintf("%v [%s]", s["description"], strings.Join(words, ", "))
	}
	return out
}

// commandTools are the agent-facing rows of the command table, in its order.
func commandTools() []controlplane.CommandSpec {
	var out []controlplane.CommandSpec
	for _, c := range controlplane.Commands() {
		if c.Tool {
			out = append(out, c)
		}
	}
	return out
}
