package scriptedmodel

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/agentproof/agentproof/canonjson"
)

// Frame is one server-sent event: Event is the `event:` line ("" for data-only frames,
// as Chat Completions sends them) and Data the `data:` payload (a JSON object whose
// "type" equals Event when Event is set, or the literal [DONE]).
type Frame struct {
	Event string
	Data  []byte
}

// Bytes renders the frame: "event: NAME\n" (when set), "data: DATA\n", "\n".
func (f Frame) Bytes() []byte {
	var b bytes.Buffer
	if f.Event != "" {
		b.WriteString("event: ")
		b.WriteString(f.Event)
		b.WriteByte('\n')
	}
	b.WriteString("data: ")
	b.Write(f.Data)
	b.WriteString("\n\n")
	return b.Bytes()
}

// Meta is what a response carries besides the reply: the response id (ids of items are
// derived from it), the creation time (Unix seconds), the model id and the usage.
type Meta struct {
	ID      string
	Created int64
	Model   string
	Usage   Usage
}

type member = canonjson.Member
type object = canonjson.Object

// encode is canonjson.Ordered for values built here; they always encode.
func encode(v any) []byte {
	b, err := canonjson.Ordered(v)
	if err != nil {
		panic(fmt.Sprintf("scriptedmodel: encoding a response: %v", err)) // a bug: only strings, ints, objects
	}
	return b
}

// typed builds an event frame whose event name and "type" member come from one value
// (Codex and the AI SDK key on the type inside data).
func typed(name string, members ...member) Frame {
	obj := append(object{{Key: "type", Value: name}}, members...)
	return Frame{Event: name, Data: encode(obj)}
}

// StreamFrames returns the SSE frames of reply in format f.
func StreamFrames(f Format, reply Reply, m Meta, includeUsage bool) []Frame {
	switch f {
	case FormatResponses:
		return responsesFrames(reply, m)
	case FormatChat:
		return chatFrames(reply, m, includeUsage)
	case FormatGemini:
		return geminiFrames(reply, m)
	default:
		return messagesFrames(reply, m)
	}
}

// Body returns the non-streamed JSON body of reply in format f (Claude Code retries a
// turn without streaming when it distrusts a stream).
func Body(f Format, reply Reply, m Meta) []byte {
	switch f {
	case FormatResponses:
		return encode(responseObject(reply, m, "completed", true))
	case FormatGemini:
		return encode(geminiResponse(reply, m))
	case FormatChat:
		msg := object{{Key: "role", Value: "assistant"}}
		finish := "stop"
		if reply.IsCall() {
			msg = append(msg, member{Key: "content", Value: nil}, member{Key: "tool_calls", Value: []any{object{
				{Key: "id", Value: reply.CallID}, {Key: "type", Value: "function"},
				{Key: "function", Value: object{{Key: "name", Value: reply.ToolName}, {Key: "arguments", Value: reply.Arguments}}},
			}}})
			finish = "tool_calls"
		} else {
			msg = append(msg, member{Key: "content", Value: reply.Text})
		}
		return encode(object{
			{Key: "id", Value: "chatcmpl-" + m.ID}, {Key: "object", Value: "chat.completion"},
			{Key: "created", Value: m.Created}, {Key: "model", Value: m.Model},
			{Key: "choices", Value: []any{object{{Key: "index", Value: 0}, {Key: "message", Value: msg}, {Key: "finish_reason", Value: finish}}}},
			{Key: "usage", Value: chatUsage(m.Usage)},
		})
	default:
		return encode(object{
			{Key: "id", Value: "msg_" + m.ID}, {Key: "type", Value: "message"}, {Key: "role", Value: "assistant"},
			{Key: "model", Value: m.Model}, {Key: "content", Value: []any{messagesBlock(reply, true)}},
			{Key: "stop_reason", Value: stopReason(reply)}, {Key: "stop_sequence", Value: nil},
			{Key: "usage", Value: object{{Key: "input_tokens", Value: m.Usage.InputTokens}, {Key: "output_tokens", Value: m.Usage.OutputTokens}}},
		})
	}
}

// ---- OpenAI Responses ----

func responsesUsage(u Usage) object {
	return object{
		{Key: "input_tokens", Value: u.InputTokens},
		{Key: "input_tokens_details", Value: object{{Key: "cached_tokens", Value: 0}}},
		{Key: "output_tokens", Value: u.OutputTokens},
		{Key: "output_tokens_details", Value: object{{Key: "reasoning_tokens", Value: 0}}},
		{Key: "total_tokens", Value: u.InputTokens + u.OutputTokens},
	}
}

// responsesItem is the output item of reply; done selects the finished form.
func responsesItem(reply Reply, m Meta, done bool) object {
	status := "in_progress"
	if done {
		status = "completed"
	}
	if reply.IsCall() && reply.Custom {
		input := ""
		if done {
			input = reply.Arguments
		}
		return object{
			{Key: "id", Value: "ctc_" + m.ID}, {Key: "type", Value: "custom_tool_call"}, {Key: "status", Value: status},
			{Key: "call_id", Value: reply.CallID}, {Key: "name", Value: reply.ToolName}, {Key: "input", Value: input},
		}
	}
	if reply.IsCall() {
		args := ""
		if done {
			args = reply.Arguments
		}
		item := object{
			{Key: "id", Value: "fc_" + m.ID}, {Key: "type", Value: "function_call"}, {Key: "status", Value: status},
			{Key: "call_id", Value: reply.CallID}, {Key: "name", Value: reply.ToolName},
		}
		if reply.Namespace != "" {
			item = append(item, member{Key: "namespace", Value: reply.Namespace})
		}
		return append(item, member{Key: "arguments", Value: args})
	}
	content := []any{}
	if done {
		content = []any{outputText(reply.Text)}
	}
	return object{
		{Key: "id", Value: "msg_" + m.ID}, {Key: "type", Value: "message"}, {Key: "status", Value: status},
		{Key: "role", Value: "assistant"}, {Key: "content", Value: content},
	}
}

func outputText(text string) object {
	return object{{Key: "type", Value: "output_text"}, {Key: "text", Value: text}, {Key: "annotations", Value: []any{}}}
}

func responseObject(reply Reply, m Meta, status string, withOutput bool) object {
	o := object{
		{Key: "id", Value: "resp_" + m.ID}, {Key: "object", Value: "response"}, {Key: "created_at", Value: m.Created},
		{Key: "status", Value: status}, {Key: "model", Value: m.Model},
	}
	if !withOutput {
		return append(o, member{Key: "output", Value: []any{}})
	}
	return append(o, member{Key: "output", Value: []any{responsesItem(reply, m, true)}}, member{Key: "usage", Value: responsesUsage(m.Usage)})
}

// responsesFrames: created → in_progress → output_item.added → (text: content_part.added
// → output_text.delta → output_text.done → content_part.done | call:
// function_call_arguments.delta → .done | freeform call: custom_tool_call_input.delta
// → .done) → output_item.done → completed. Every event
// carries its type and a sequence_number; lifecycle events carry a response object.
func responsesFrames(reply Reply, m Meta) []Frame {
	seq := 0
	next := func(name string, members ...member) Frame {
		f := typed(name, append([]member{{Key: "sequence_number", Value: seq}}, members...)...)
		seq++
		return f
	}
	out := []Frame{
		next("response.created", member{Key: "response", Value: responseObject(reply, m, "in_progress", false)}),
		next("response.in_progress", member{Key: "response", Value: responseObject(reply, m, "in_progress", false)}),
		next("response.output_item.added", member{Key: "output_index", Value: 0}, member{Key: "item", Value: responsesItem(reply, m, false)}),
	}
	if reply.IsCall() && reply.Custom {
		id := "ctc_" + m.ID
		out = append(out,
			next("response.custom_tool_call_input.delta", member{Key: "item_id", Value: id}, member{Key: "output_index", Value: 0}, member{Key: "delta", Value: reply.Arguments}),
			next("response.custom_tool_call_input.done", member{Key: "item_id", Value: id}, member{Key: "output_index", Value: 0}, member{Key: "input", Value: reply.Arguments}),
		)
	} else if reply.IsCall() {
		id := "fc_" + m.ID
		out = append(out,
			next("response.function_call_arguments.delta", member{Key: "item_id", Value: id}, member{Key: "output_index", Value: 0}, member{Key: "delta", Value: reply.Arguments}),
			next("response.function_call_arguments.done", member{Key: "item_id", Value: id}, member{Key: "output_index", Value: 0}, member{Key: "arguments", Value: reply.Arguments}),
		)
	} else {
		id := "msg_" + m.ID
		loc := []member{{Key: "item_id", Value: id}, {Key: "output_index", Value: 0}, {Key: "content_index", Value: 0}}
		out = append(out,
			next("response.content_part.added", append(loc, member{Key: "part", Value: outputText("")})...),
			next("response.output_text.delta", append(loc, member{Key: "delta", Value: reply.Text}, member{Key: "logprobs", Value: []any{}})...),
			next("response.output_text.done", append(loc, member{Key: "text", Value: reply.Text}, member{Key: "logprobs", Value: []any{}})...),
			next("response.content_part.done", append(loc, member{Key: "part", Value: outputText(reply.Text)})...),
		)
	}
	return append(out,
		next("response.output_item.done", member{Key: "output_index", Value: 0}, member{Key: "item", Value: responsesItem(reply, m, true)}),
		next("response.completed", member{Key: "response", Value: responseObject(reply, m, "completed", true)}),
	)
}

// ---- OpenAI Chat Completions ----

func chatUsage(u Usage) object {
	return object{
		{Key: "prompt_tokens", Value: u.InputTokens}, {Key: "completion_tokens", Value: u.OutputTokens},
		{Key: "total_tokens", Value: u.InputTokens + u.OutputTokens},
	}
}

// chatFrames: data-only chunks (role + content or tool call, then finish_reason, then an
// optional usage chunk with empty choices), then `data: [DONE]`.
func chatFrames(reply Reply, m Meta, includeUsage bool) []Frame {
	chunk := func(choices []any, extra ...member) Frame {
		o := object{
			{Key: "id", Value: "chatcmpl-" + m.ID}, {Key: "object", Value: "chat.completion.chunk"},
			{Key: "created", Value: m.Created}, {Key: "model", Value: m.Model}, {Key: "choices", Value: choices},
		}
		return Frame{Data: encode(append(o, extra...))}
	}
	choice := func(delta object, finish any) []any {
		return []any{object{{Key: "index", Value: 0}, {Key: "delta", Value: delta}, {Key: "finish_reason", Value: finish}}}
	}
	var first object
	finish := "stop"
	if reply.IsCall() {
		finish = "tool_calls"
		first = object{{Key: "role", Value: "assistant"}, {Key: "content", Value: nil}, {Key: "tool_calls", Value: []any{object{
			{Key: "index", Value: 0}, {Key: "id", Value: reply.CallID}, {Key: "type", Value: "function"},
			{Key: "function", Value: object{{Key: "name", Value: reply.ToolName}, {Key: "arguments", Value: reply.Arguments}}},
		}}}}
	} else {
		first = object{{Key: "role", Value: "assistant"}, {Key: "content", Value: reply.Text}}
	}
	out := []Frame{chunk(choice(first, nil)), chunk(choice(object{}, finish))}
	if includeUsage {
		out = append(out, chunk([]any{}, member{Key: "usage", Value: chatUsage(m.Usage)}))
	}
	return append(out, Frame{Data: []byte("[DONE]")})
}

// ---- Anthropic Messages ----

func stopReason(reply Reply) string {
	if reply.IsCall() {
		return "tool_use"
	}
	return "end_turn"
}

// messagesBlock is the content block of reply; done gives the complete block (input or
// text filled in), otherwise the content_block_start form.
func messagesBlock(reply Reply, done bool) object {
	if reply.IsCall() {
		input := json.RawMessage("{}")
		if done {
			input = json.RawMessage(reply.Arguments)
		}
		return object{{Key: "type", Value: "tool_use"}, {Key: "id", Value: "toolu_" + reply.CallID}, {Key: "name", Value: reply.ToolName}, {Key: "input", Value: input}}
	}
	text := ""
	if done {
		text = reply.Text
	}
	return object{{Key: "type", Value: "text"}, {Key: "text", Value: text}}
}

// messagesFrames: message_start → content_block_start → content_block_delta
// (text_delta | input_json_delta) → content_block_stop → message_delta (stop_reason,
// usage) → message_stop, each with its `event:` line (without them Claude Code falls
// back to non-streamed requests).
func messagesFrames(reply Reply, m Meta) []Frame {
	delta := object{{Key: "type", Value: "text_delta"}, {Key: "text", Value: reply.Text}}
	if reply.IsCall() {
		delta = object{{Key: "type", Value: "input_json_delta"}, {Key: "partial_json", Value: reply.Arguments}}
	}
	return []Frame{
		typed("message_start", member{Key: "message", Value: object{
			{Key: "id", Value: "msg_" + m.ID}, {Key: "type", Value: "message"}, {Key: "role", Value: "assistant"},
			{Key: "model", Value: m.Model}, {Key: "content", Value: []any{}}, {Key: "stop_reason", Value: nil},
			{Key: "stop_sequence", Value: nil},
			{Key: "usage", Value: object{{Key: "input_tokens", Value: m.Usage.InputTokens}, {Key: "output_tokens", Value: 1}}},
		}}),
		typed("content_block_start", member{Key: "index", Value: 0}, member{Key: "content_block", Value: messagesBlock(reply, false)}),
		typed("content_block_delta", member{Key: "index", Value: 0}, member{Key: "delta", Value: delta}),
		typed("content_block_stop", member{Key: "index", Value: 0}),
		typed("message_delta",
			member{Key: "delta", Value: object{{Key: "stop_reason", Value: stopReason(reply)}, {Key: "stop_sequence", Value: nil}}},
			member{Key: "usage", Value: object{{Key: "input_tokens", Value: m.Usage.InputTokens}, {Key: "output_tokens", Value: m.Usage.OutputTokens}}}),
		typed("message_stop"),
	}
}
