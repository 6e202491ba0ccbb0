package cli

import (
	"strings"
	"testing"
)

// TestVersionRevisionFallback: without VCS stamping (go test binaries have none) the
// revision comes from Revision (-ldflags -X) when set, else it is unknown with a note
// saying why.
func TestVersionRevisionFallback(t *testing.T) {
	old := Revision
	t.Cleanup(func() { Revision = old })
	Revision = ""
	v := readVersion()
	if v.Revision != "unknown" || v.RevisionSource != revisionUnknown || !strings.Contains(v.RevisionNote, "-buildvcs=false") {
		t.Errorf("without stamping: %+v", v)
	}
	Revision = "0123abc"
	v = readVersion()
	if v.Revision != "0123abc" || v.RevisionSource != revisionFromLdflags || v.RevisionNote != "" {
		t.Errorf("with -ldflags -X: %+v", v)
	}
}
