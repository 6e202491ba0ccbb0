package scriptedmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Format is a wire format the scripted model speaks.
type Format string

// Wire formats.
const (
	// FormatResponses is OpenAI Responses: POST /v1/responses (Codex, OpenCode with
	// @ai-sdk/openai).
	FormatResponses Format = "responses"
	// FormatChat is OpenAI Chat Completions: POST /v1/chat/completions (OpenCode with
	// @ai-sdk/openai-compatible).
	FormatChat Format = "chat"
	// FormatMessages is Anthropic Messages: POST /v1/messages (Claude Code, OpenCode with
	// @ai-sdk/anthropic).
	FormatMessages Format = "messages"
	// FormatGemini is the Gemini API: POST /v1beta/models/<model>:streamGenerateContent
	// and :generateContent (Gemini CLI).
	FormatGemini Format = "gemini"
)

// MaxRequestBytes bounds a request body the scripted model reads (bytes).
const MaxRequestBytes = 16 << 20

// Tool is one tool a request offers the model: its name, its parameters' JSON Schema
// (nil when the tool has none, such as hosted tools), and for Codex namespace tools the
// namespace it sits in.
type Tool struct {
	Name       string
	Namespace  string
	Parameters json.RawMessage
	// Custom is a freeform tool (Responses type "custom", such as Codex's apply_patch):
	// its call carries raw input text, not JSON arguments.
	Custom bool
}

// ItemKind classifies one conversation item.
type ItemKind string

// Conversation item kinds.
const (
	ItemUser          ItemKind = "user"           // user (or developer) text
	ItemAssistantText ItemKind = "assistant_text" // the model answered text
	ItemAssistantCall ItemKind = "assistant_call" // the model called a tool
	ItemToolResult    ItemKind = "tool_result"    // a tool's output sent back
)

// Item is one conversation item in a wire-neutral form: Text holds the text (user,
// assistant or tool output), Name and CallID the tool call's name and id; Error is
// set on a tool result the wire flags as an error (Anthropic is_error, a Gemini
// functionResponse whose response has an "error" key).
type Item struct {
	Kind   ItemKind
	Text   string
	Name   string
	CallID string
	Error  bool
}

// Request is a decoded model request in a wire-neutral form.
type Request struct {
	Format Format
	Model  string
	// Stream is whether the client asked for a streamed (SSE) response.
	Stream bool
	// IncludeUsage is Chat Completions' stream_options.include_usage.
	IncludeUsage bool
	Tools        []Tool
	Items        []Item
}

// AssistantTurns counts the assistant turns in the conversation: one per assistant
// message (Chat, Messages) or per assistant output item (Responses). It picks the
// script step: a conversation with n assistant turns gets step n (0-based).
func (r *Request) AssistantTurns() int {
	n := 0
	for _, it := range r.Items {
		if it.Kind == ItemAssistantText || it.Kind == ItemAssistantCall {
			n++
		}
	}
	return n
}

// LatestInput is the text of the last tool result or user message after the last
// assistant item ("" when there is none): what a step's Expect is checked against.
// Input is every input of the conversation that is not the assistant's (the prompt,
// user messages, tool results), latest first, one per line.
func (r *Request) Input() string {
	var parts []string
	for i := len(r.Items) - 1; i >= 0; i-- {
		if it := r.Items[i]; it.Kind != ItemAssistantText && it.Kind != ItemAssistantCall {
			parts = append(parts, it.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func (r *Request) LatestInput() string {
	var parts []string
	for i := len(r.Items) - 1; i >= 0; i-- {
		it := r.Items[i]
		if it.Kind == ItemAssistantText || it.Kind == ItemAssistantCall {
			break
		}
		parts = append(parts, it.Text)
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, "\n")
}

// DecodeError is a request body that is not a valid request of its wire format.
type DecodeError struct {
	Format Format
	Reason string
}

// Error renders "decoding a <format> request: <reason>".
func (e *DecodeError) Error() string {
	return fmt.Sprintf("decoding a %s request: %s", e.Format, e.Reason)
}

// DecodeRequest decodes a request body of format f. Unknown fields and unknown item or
// tool types are ignored (clients add fields with every release); it returns a
// *DecodeError when the body is not a JSON object or a known field has the wrong type.
func DecodeRequest(f Format, body []byte) (*Request, error) {
	fail := func(reason string, a ...any) error {
		return &DecodeError{Format: f, Reason: fmt.Sprintf(reason, a...)}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, fail("body is not a JSON object")
	}
	r := &Request{Format: f}
	if err := optional(top, "model", &r.Model); err != nil {
		return nil, fail("%v", err)
	}
	if err := optional(top, "stream", &r.Stream); err != nil {
		return nil, fail("%v", err)
	}
	var err error
	switch f {
	case FormatResponses:
		err = decodeResponses(top, r)
	case FormatChat:
		err = decodeChat(top, r)
	case FormatMessages:
		err = decodeMessages(top, r)
	case FormatGemini:
		err = decodeGemini(top, r)
	default:
		err = fmt.Errorf("unknown format")
	}
	if err != nil {
		return nil, fail("%v", err)
	}
	return r, nil
}

// optional decodes top[key] into dst when present and not null.
func optional(top map[string]json.RawMessage, key string, dst any) error {
	raw, ok := top[key]
	if !ok || isNull(raw) {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("%s: %v", key, err)
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// contentText extracts the text of a content value: a string, or an array of parts
// whose text is in "text" (input_text, output_text, text) or whose nested "content"
// holds text (Anthropic tool_result).
func contentText(raw json.RawMessage) string {
	if isNull(raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var out []string
	for _, p := range parts {
		switch {
		case p.Text != "":
			out = append(out, p.Text)
		case len(p.Content) > 0:
			if t := contentText(p.Content); t != "" {
				out = append(out, t)
			}
		}
	}
	return strings.Join(out, "\n")
}

// decodeResponses reads an OpenAI Responses body: input (string or items), tools
// (function and freeform tools; namespace tools flattened with their namespace).
func decodeResponses(top map[string]json.RawMessage, r *Request) error {
	if raw, ok := top["input"]; ok && !isNull(raw) {
		if err := decodeResponsesInput(raw, r); err != nil {
			return err
		}
	}
	if raw, ok := top["tools"]; ok && !isNull(raw) {
		var tools []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &tools); err != nil {
			return fmt.Errorf("tools: not a list of objects")
		}
		for _, t := range tools {
			r.Tools = append(r.Tools, responsesTools(t)...)
		}
	}
	return nil
}

// decodeResponsesInput reads a Responses input: a string (one user item) or a list of
// items (calls with their arguments, or a freeform call's input text; results;
// assistant, user, developer and system messages).
func decodeResponsesInput(raw json.RawMessage, r *Request) error {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		r.Items = append(r.Items, Item{Kind: ItemUser, Text: s})
		return nil
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return fmt.Errorf("input: neither a string nor a list of items")
	}
	for i, it := range items {
		var typ, role, name, callID string
		_ = optional(it, "type", &typ)
		_ = optional(it, "role", &role)
		_ = optional(it, "name", &name)
		_ = optional(it, "call_id", &callID)
		switch {
		case typ == "function_call" || typ == "custom_tool_call" || typ == "local_shell_call":
			var args string
			_ = optional(it, "arguments", &args)
			if typ == "custom_tool_call" {
				_ = optional(it, "input", &args)
			}
			r.Items = append(r.Items, Item{Kind: ItemAssistantCall, Name: name, CallID: callID, Text: args})
		case typ == "function_call_output" || typ == "custom_tool_call_output" || typ == "local_shell_call_output":
			r.Items = append(r.Items, Item{Kind: ItemToolResult, CallID: callID, Text: contentText(it["output"])})
		case (typ == "message" || typ == "") && role == "assistant":
			r.Items = append(r.Items, Item{Kind: ItemAssistantText, Text: contentText(it["content"])})
		case (typ == "message" || typ == "") && (role == "user" || role == "developer" || role == "system"):
			r.Items = append(r.Items, Item{Kind: ItemUser, Text: contentText(it["content"])})
		case typ == "" && role == "":
			return fmt.Errorf("input[%d]: an item needs a type or a role", i)
		}
	}
	return nil
}

// responsesTools are the tools one entry of a Responses tools list offers: a function
// or freeform (custom) tool, or the tools of a namespace.
func responsesTools(t map[string]json.RawMessage) []Tool {
	var typ, name string
	_ = optional(t, "type", &typ)
	_ = optional(t, "name", &name)
	var out []Tool
	switch typ {
	case "function", "custom":
		if name != "" {
			out = append(out, Tool{Name: name, Parameters: nonNull(t["parameters"]), Custom: typ == "custom"})
		}
	case "namespace":
		var inner []map[string]json.RawMessage
		_ = optional(t, "tools", &inner)
		for _, in := range inner {
			var iname string
			_ = optional(in, "name", &iname)
			if iname != "" {
				out = append(out, Tool{Name: iname, Namespace: name, Parameters: nonNull(in["parameters"])})
			}
		}
	}
	return out
}

func nonNull(raw json.RawMessage) json.RawMessage {
	if isNull(raw) {
		return nil
	}
	return raw
}

// decodeChat reads a Chat Completions body: messages, tools, stream_options.
func decodeChat(top map[string]json.RawMessage, r *Request) error {
	var opts struct {
		IncludeUsage bool `json:"include_usage"`
	}
	if err := optional(top, "stream_options", &opts); err != nil {
		return err
	}
	r.IncludeUsage = opts.IncludeUsage
	var msgs []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	}
	if err := optional(top, "messages", &msgs); err != nil {
		return err
	}
	for _, m := range msgs {
		switch m.Role {
		case "assistant":
			if len(m.ToolCalls) > 0 {
				c := m.ToolCalls[0]
				r.Items = append(r.Items, Item{Kind: ItemAssistantCall, Name: c.Function.Name, CallID: c.ID, Text: c.Function.Arguments})
			} else {
				r.Items = append(r.Items, Item{Kind: ItemAssistantText, Text: contentText(m.Content)})
			}
		case "tool":
			r.Items = append(r.Items, Item{Kind: ItemToolResult, CallID: m.ToolCallID, Text: contentText(m.Content)})
		default:
			r.Items = append(r.Items, Item{Kind: ItemUser, Text: contentText(m.Content)})
		}
	}
	var tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := optional(top, "tools", &tools); err != nil {
		return err
	}
	for _, t := range tools {
		if t.Function.Name != "" {
			r.Tools = append(r.Tools, Tool{Name: t.Function.Name, Parameters: nonNull(t.Function.Parameters)})
		}
	}
	return nil
}

// decodeMessages reads an Anthropic Messages body: messages (string or block content;
// role "system" entries are accepted), tools.
func decodeMessages(top map[string]json.RawMessage, r *Request) error {
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := optional(top, "messages", &msgs); err != nil {
		return err
	}
	for _, m := range msgs {
		var blocks []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
			IsError   bool            `json:"is_error"`
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			kind := ItemUser
			if m.Role == "assistant" {
				kind = ItemAssistantText
			}
			r.Items = append(r.Items, Item{Kind: kind, Text: s})
			continue
		}
		if !isNull(m.Content) {
			if err := json.Unmarshal(m.Content, &blocks); err != nil {
				return fmt.Errorf("messages: content is neither a string nor a list of blocks")
			}
		}
		if m.Role == "assistant" {
			// One assistant message is one turn: a tool_use block makes it a call.
			it := Item{Kind: ItemAssistantText}
			var texts []string
			for _, b := range blocks {
				switch b.Type {
				case "tool_use":
					if it.Kind != ItemAssistantCall {
						it = Item{Kind: ItemAssistantCall, Name: b.Name, CallID: b.ID, Text: string(b.Input)}
					}
				case "text":
					texts = append(texts, b.Text)
				}
			}
			if it.Kind == ItemAssistantText {
				it.Text = strings.Join(texts, "\n")
			}
			r.Items = append(r.Items, it)
			continue
		}
		for _, b := range blocks {
			switch b.Type {
			case "tool_result":
				r.Items = append(r.Items, Item{Kind: ItemToolResult, CallID: b.ToolUseID, Text: contentText(b.Content), Error: b.IsError})
			case "text":
				r.Items = append(r.Items, Item{Kind: ItemUser, Text: b.Text})
			}
		}
	}
	var tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	if err := optional(top, "tools", &tools); err != nil {
		return err
	}
	for _, t := range tools {
		if t.Name != "" {
			r.Tools = append(r.Tools, Tool{Name: t.Name, Parameters: nonNull(t.InputSchema)})
		}
	}
	return nil
}
