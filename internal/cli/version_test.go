package cli

import (
	"strings"
	"testing"

	"github.com/agentproof/agentproof/agent/clis"
)

// TestVersionRevisionFallback: without VCS stamping (go test binaries have none) the
// revision comes from Revision (-ldflags -X) when set, else it is unknown with a note
// saying why.
func TestVersionRevisionFallback(t *testing.T) {
	old := Revision
	t.Cleanup(func() { Revision = old })
	Revision = ""
	v := readVersion()
	if v.Revision != "unknown" || v.RevisionSource != revisionUnknown || !strings.Contains(v.RevisionNote, "go build -buildvcs=true") {
		t.Errorf("without stamping: %+v", v)
	}
	Revision = "0123abc"
	v = readVersion()
	if v.Revision != "0123abc" || v.RevisionSource != revisionFromLdflags || v.RevisionNote != "" {
		t.Errorf("with -ldflags -X: %+v", v)
	}
}

// TestRootHelpListsPinnedCLIs: the root --help and the agents command name every CLI of
// the pinned registry (the lists are generated from clis.Pinned).
func TestRootHelpListsPinnedCLIs(t *testing.T) {
	t.Parallel()
	var out, errb strings.Builder
	if code := Main([]string{"--help"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("--help exited %d: %s", code, errb.String())
	}
	var agents strings.Builder
	Main([]string{"agents", "--help"}, strings.NewReader(""), &agents, &errb)
	for _, c := range clis.Pinned {
		if !strings.Contains(out.String(), "  "+c.Name+" ") || !strings.Contains(out.String(), c.Spec()) {
			t.Errorf("root --help does not list pinned CLI %s (%s)", c.Name, c.Spec())
		}
		if !strings.Contains(agents.String(), c.Name) {
			t.Errorf("agents --help does not name pinned CLI %s", c.Name)
		}
	}
}
