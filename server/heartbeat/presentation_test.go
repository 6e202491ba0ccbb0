package heartbeat

import (
	"os"
	"testing"

	"github.com/agentproof/agentproof/controlplane/mcp"
)

// TestReadPresentationReadsTheMCPRecord: what `agentproof mcp` writes is what the runner
// reads (one format, owned by package mcp); a run without a record has none; a record
// of another run is refused.
func TestReadPresentationReadsTheMCPRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if p, err := ReadPresentation(dir, "run/1"); err != nil || p != nil {
		t.Fatalf("no record: %+v, %v; want nil, nil", p, err)
	}
	if err := mcp.WritePresentation(dir, mcp.Presentation{RunID: "run/1", CommentID: "comment-7", Tool: "finish_task", Text: "M_1"}); err != nil {
		t.Fatal(err)
	}
	p, err := ReadPresentation(dir, "run/1")
	if err != nil || p == nil || p.CommentID != "comment-7" || p.Text != "M_1" {
		t.Fatalf("ReadPresentation = %+v, %v; want comment-7 with M_1", p, err)
	}
	if err := mcp.WritePresentation(dir, mcp.Presentation{RunID: "run-2", CommentID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := renameForTest(mcp.PresentationPath(dir, "run-2"), mcp.PresentationPath(dir, "run-3")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPresentation(dir, "run-3"); err == nil {
		t.Error("a record of another run was accepted")
	}
}

func renameForTest(from, to string) error { return os.Rename(from, to) }
