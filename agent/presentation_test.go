package agent

import (
	"os"
	"testing"
)

// The presentation record round-trips; a run without one has none; a record of another
// run, or a malformed one, is refused.
func TestPresentationRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if p, err := ReadPresentation(dir, "run/1"); err != nil || p != nil {
		t.Fatalf("no record: %+v, %v; want nil, nil", p, err)
	}
	if err := WritePresentation(dir, PresentationRecord{RunID: "run/1", CommentID: "comment-7", Tool: "finish_task", Text: "M_1"}); err != nil {
		t.Fatal(err)
	}
	p, err := ReadPresentation(dir, "run/1")
	if err != nil || p == nil || p.CommentID != "comment-7" || p.Text != "M_1" || p.Schema != PresentationSchema {
		t.Fatalf("ReadPresentation = %+v, %v; want comment-7 with M_1", p, err)
	}
	if err := WritePresentation(dir, PresentationRecord{RunID: "run-2", CommentID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(PresentationPath(dir, "run-2"), PresentationPath(dir, "run-3")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPresentation(dir, "run-3"); err == nil {
		t.Error("a record of another run was accepted")
	}
	if err := os.WriteFile(PresentationPath(dir, "run-4"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPresentation(dir, "run-4"); err == nil {
		t.Error("a malformed record was accepted")
	}
}
