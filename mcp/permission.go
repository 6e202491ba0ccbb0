package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentproof/agentproof/agent/session"
)

// The permission prompt tool (docs/clis.md "app:claude"): when the server is given a
// permission relay (Config.PermissionRelay, from session.EnvPermissionRelay), it also
// serves PermissionPromptTool, the tool Claude Code calls instead of prompting a
// person (`--permission-prompt-tool mcp__agentproof__permission_prompt`). Claude Code
// calls it with {tool_name, input, tool_use_id} and reads its answer as one text
// content holding a JSON permission result ({"behavior": "allow", "updatedInput": …}
// or {"behavior": "deny", "message": …}). The tool relays the call's arguments to the
// session's driver (session.AskRelay) and returns the driver's answer as it is: the
// driver asks the human (a board permission card) and writes the answer in Claude
// Code's shape. When the relay cannot be reached or answers nothing usable, the tool
// denies (a permission nobody granted is refused).

// PermissionPromptTool is the permission prompt tool's name.
const PermissionPromptTool = "permission_prompt"

// permissionPromptSchema is the tool's input: Claude Code's permission prompt input.
var permissionPromptSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"tool_name":   map[string]any{"type": "string", "description": "The name of the tool requesting permission"},
		"input":       map[string]any{"type": "object", "description": "The input for the tool"},
		"tool_use_id": map[string]any{"type": "string", "description": "The unique tool use request ID"},
	},
	"required": []string{"tool_name", "input"},
}

// addPermissionPrompt adds the permission prompt tool relaying to the socket relay.
func addPermissionPrompt(s *sdk.Server, relay string, logger interface{ Info(string, ...any) }) {
	s.AddTool(&sdk.Tool{Name: PermissionPromptTool, InputSchema: permissionPromptSchema,
		Description: "Asks the human whether a tool call may run (agentproof's permission prompt; not for the model)."},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var raw json.RawMessage
			if req != nil && req.Params != nil {
				raw = req.Params.Arguments
			}
			text, err := RelayPermission(ctx, relay, raw)
			if err != nil {
				logger.Info("permission prompt denied", "error", err.Error())
			} else {
				logger.Info("permission prompt answered")
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
		})
}

// RelayPermission relays one permission prompt's arguments (a JSON object) to the
// relay socket and returns the answer's text; when the relay fails or its answer is
// not a JSON object with a behavior, the text is a deny naming why, and err says so.
func RelayPermission(ctx context.Context, relay string, args json.RawMessage) (string, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(args, &probe); err != nil {
		return denyText("the permission request is not a JSON object"), err
	}
	compact, _ := json.Marshal(probe)
	answer, err := session.AskRelay(ctx, relay, compact)
	if err != nil {
		return denyText("agentproof could not ask the human: " + err.Error()), err
	}
	var a struct {
		Behavior string `json:"behavior"`
	}
	if json.Unmarshal(answer, &a) != nil || a.Behavior == "" {
		err := errors.New("the relay's answer has no behavior")
		return denyText("agentproof's answer was unreadable"), err
	}
	return string(answer), nil
}

// denyText is Claude Code's deny permission result with message.
func denyText(message string) string {
	b, _ := json.Marshal(map[string]string{"behavior": "deny", "message": strings.TrimSpace(message)})
	return string(b)
}
