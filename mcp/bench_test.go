package mcp_test

import (
	"context"
	"fmt"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/mcp"
)

// BenchmarkReportProgress measures one report_progress tool call end to end: MCP client →
// this package's server (in memory) → argument validation → HTTP agent API on 127.0.0.1
// → the control plane's state machine, and back.
func BenchmarkReportProgress(b *testing.B) {
	w := newWorld(b, controlplane.Seed{})
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		res, err := w.session.CallTool(ctx, &sdk.CallToolParams{Name: "report_progress", Arguments: map[string]any{"body": fmt.Sprint("step ", i)}})
		if err != nil || res.IsError {
			b.Fatalf("call %d: %v %+v", i, err, res)
		}
	}
}

// BenchmarkDecodeArguments measures argument validation of a write_document call.
func BenchmarkDecodeArguments(b *testing.B) {
	raw := []byte(`{"key":"plan","title":"Plan","body":"1. read\n2. write\n3. test","changeSummary":"first"}`)
	for range b.N {
		if _, err := mcp.DecodeArguments("write_document", raw); err != nil {
			b.Fatal(err)
		}
	}
}
