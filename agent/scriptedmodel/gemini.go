package scriptedmodel

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The Gemini API dialect (Gemini CLI; docs/acp.md "Gemini CLI"): POST
// /v1beta/models/<model>:streamGenerateContent?alt=sse (data-only SSE frames, each a
// GenerateContentResponse) and :generateContent (one JSON GenerateContentResponse).
// A request's contents alternate role "user" (text parts, functionResponse parts) and
// "model" (text parts, functionCall parts, thought parts); one model content is one
// assistant turn. Tools are functionDeclarations (parameters or parametersJsonSchema).

// decodeGemini reads a Gemini generateContent body: contents, tools.
func decodeGemini(top map[string]json.RawMessage, r *Request) error {
	var contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text         *string `json:"text"`
			Thought      bool    `json:"thought"`
			FunctionCall *struct {
				ID   string          `json:"id"`
				Name string          `json:"name"`
				Args json.RawMessage `json:"args"`
			} `json:"functionCall"`
			FunctionResponse *struct {
				ID       string          `json:"id"`
				Name     string          `json:"name"`
				Response json.RawMessage `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	}
	if err := optional(top, "contents", &contents); err != nil {
		return err
	}
	for i, c := range contents {
		switch c.Role {
		case "model":
			it := Item{Kind: ItemAssistantText}
			var texts []string
			for _, p := range c.Parts {
				switch {
				case p.FunctionCall != nil && it.Kind != ItemAssistantCall:
					it = Item{Kind: ItemAssistantCall, Name: p.FunctionCall.Name, CallID: p.FunctionCall.ID, Text: string(p.FunctionCall.Args)}
				case p.Text != nil && !p.Thought:
					texts = append(texts, *p.Text)
				}
			}
			if it.Kind == ItemAssistantText {
				it.Text = strings.Join(texts, "\n")
			}
			r.Items = append(r.Items, it)
		case "user", "":
			for _, p := range c.Parts {
				switch {
				case p.FunctionResponse != nil:
					r.Items = append(r.Items, Item{Kind: ItemToolResult, Name: p.FunctionResponse.Name, CallID: p.FunctionResponse.ID,
						Text: string(p.FunctionResponse.Response), Error: geminiError(p.FunctionResponse.Response)})
				case p.Text != nil:
					r.Items = append(r.Items, Item{Kind: ItemUser, Text: *p.Text})
				}
			}
		default:
			return fmt.Errorf("contents[%d]: role %q is neither user nor model", i, c.Role)
		}
	}
	var tools []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Parameters           json.RawMessage `json:"parameters"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	}
	if err := optional(top, "tools", &tools); err != nil {
		return err
	}
	for _, t := range tools {
		for _, f := range t.FunctionDeclarations {
			if f.Name == "" {
				continue
			}
			params := nonNull(f.ParametersJSONSchema)
			if params == nil {
				params = nonNull(f.Parameters)
			}
			r.Tools = append(r.Tools, Tool{Name: f.Name, Parameters: params})
		}
	}
	return nil
}

// geminiError reports whether a functionResponse's response object has an "error"
// key that is not null (how Gemini CLI reports a failed or refused call).
func geminiError(raw json.RawMessage) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return false
	}
	e, ok := obj["error"]
	return ok && !isNull(e)
}

// geminiResponse is the GenerateContentResponse of reply: one candidate whose content
// holds the text or the function call (args as a JSON object), finishReason STOP, and
// usageMetadata.
func geminiResponse(reply Reply, m Meta) object {
	var part object
	if reply.IsCall() {
		args := json.RawMessage(reply.Arguments)
		if !json.Valid(args) {
			args = json.RawMessage("{}")
		}
		part = object{{Key: "functionCall", Value: object{{Key: "name", Value: reply.ToolName}, {Key: "args", Value: args}}}}
	} else {
		part = object{{Key: "text", Value: reply.Text}}
	}
	return object{
		{Key: "candidates", Value: []any{object{
			{Key: "content", Value: object{{Key: "role", Value: "model"}, {Key: "parts", Value: []any{part}}}},
			{Key: "finishReason", Value: "STOP"}, {Key: "index", Value: 0},
		}}},
		{Key: "usageMetadata", Value: object{
			{Key: "promptTokenCount", Value: m.Usage.InputTokens}, {Key: "candidatesTokenCount", Value: m.Usage.OutputTokens},
			{Key: "totalTokenCount", Value: m.Usage.InputTokens + m.Usage.OutputTokens},
		}},
		{Key: "modelVersion", Value: m.Model}, {Key: "responseId", Value: m.ID},
	}
}

// geminiFrames is the stream of reply: one data-only frame holding the whole response.
func geminiFrames(reply Reply, m Meta) []Frame {
	return []Frame{{Data: encode(geminiResponse(reply, m))}}
}
