package mcp_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/golden"

	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/mcp"
)

// wantToolNames are the tool names the CLIs and the scripted model rely on.
var wantToolNames = []string{
	"block_task", "comment_on_approval", "control_workspace_service", "create_skill", "create_task",
	"decide_approval", "finish_task", "get_task_context", "handoff_conversation", "list_documents", "post_chat_reply", "read_document",
	"reassign_task", "register_deliverable", "report_progress", "request_approval",
	"request_human_input", "request_review", "schedule_wake", "set_dependencies", "set_task_title", "write_document",
}

// TestToolsListGolden: the tools/list answer a real MCP client gets is
// testdata/tools.golden.json (run with -update to rewrite it).
func TestToolsListGolden(t *testing.T) {
	t.Parallel()
	w := newWorld(t, controlplane.Seed{})
	res, err := w.session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff(wantToolNames, names); diff != "" {
		t.Fatalf("tool names (-want +got):\n%s", diff)
	}
	got, err := json.MarshalIndent(res.Tools, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden.Assert(t, string(got), "tools.golden.json")
}

// TestSchemasPlainSubset: every input schema is an object with
// properties and required at the top; no schema anywhere uses $ref, $defs, oneOf, anyOf,
// allOf, not, a type list (such as ["null","string"]), a null type or additionalProperties;
// every property has exactly one type; required names only declared properties.
func TestSchemasPlainSubset(t *testing.T) {
	t.Parallel()
	banned := []string{"$ref", "$defs", "definitions", "oneOf", "anyOf", "allOf", "not", "additionalProperties", "format", "const", "$schema"}
	var walk func(tool, at string, s map[string]any)
	walk = func(tool, at string, s map[string]any) {
		for _, k := range banned {
			if _, ok := s[k]; ok {
				t.Errorf("%s %s: uses %s", tool, at, k)
			}
		}
		typ, ok := s["type"].(string)
		if !ok || typ == "null" {
			t.Errorf("%s %s: type %v, want one type name", tool, at, s["type"])
		}
		if props, ok := s["properties"].(map[string]any); ok {
			for name, p := range props {
				walk(tool, at+"/"+name, p.(map[string]any))
			}
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(tool, at+"/items", items)
		}
	}
	for _, tl := range mcp.Tools() {
		// Round-trip through JSON: what the client sees.
		b, err := json.Marshal(tl.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var s map[string]any
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		if s["type"] != "object" {
			t.Errorf("%s: top type %v", tl.Name, s["type"])
		}
		props, ok := s["properties"].(map[string]any)
		if !ok {
			t.Errorf("%s: no properties object", tl.Name)
		}
		req, ok := s["required"].([]any)
		if !ok {
			t.Errorf("%s: no required list", tl.Name)
		}
		for _, r := range req {
			if _, ok := props[r.(string)]; !ok {
				t.Errorf("%s: required %v is not a property", tl.Name, r)
			}
		}
		if tl.Description == "" {
			t.Errorf("%s: no description", tl.Name)
		}
		walk(tl.Name, "", s)
	}
}

// TestToolsMatchCommandTable: the command tools are exactly the agent-facing rows of
// the command table, in its order, each with the row's description and required
// arguments, and its optional ones (plus present on the commenting tools), so a
// reference step's args are valid arguments of its tool.
func TestToolsMatchCommandTable(t *testing.T) {
	t.Parallel()
	var want []string
	for _, c := range controlplane.Commands() {
		if c.Tool {
			want = append(want, string(c.Kind))
		}
	}
	var commands []string
	for _, tl := range mcp.Tools() {
		if !tl.Command {
			if !slices.Contains(mcp.ReadTools, tl.Name) {
				t.Errorf("%s is neither a command nor a read tool", tl.Name)
			}
			continue
		}
		commands = append(commands, tl.Name)
		c, ok := controlplane.LookupCommand(controlplane.CommandKind(tl.Name))
		if !ok || !c.Tool {
			t.Errorf("%s is not an agent-facing command of the table", tl.Name)
			continue
		}
		opt := c.Optional
		if c.Commenting {
			opt = append(opt, "present")
		}
		if diff := cmp.Diff(c.Required, tl.Required); diff != "" {
			t.Errorf("%s required (-table +tool):\n%s", tl.Name, diff)
		}
		if diff := cmp.Diff(opt, tl.Optional); diff != "" {
			t.Errorf("%s optional (-table +tool):\n%s", tl.Name, diff)
		}
		if tl.Description != c.Description || tl.Description == "" {
			t.Errorf("%s description %q, want the table's %q", tl.Name, tl.Description, c.Description)
		}
	}
	if diff := cmp.Diff(want, commands); diff != "" {
		t.Errorf("command tools (-table +tools):\n%s", diff)
	}
}
