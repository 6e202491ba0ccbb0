package heartbeat

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/controlplane/store"
)

// countingCompany is a durable company whose snapshots (copies of the state) and
// reads in place are counted.
type countingCompany struct {
	*store.Company
	snapshots, reads atomic.Int64
}

func (c *countingCompany) Snapshot(ctx context.Context) (controlplane.State, error) {
	c.snapshots.Add(1)
	return c.Company.Snapshot(ctx)
}

func (c *countingCompany) Read(ctx context.Context, read func(st *controlplane.State)) error {
	c.reads.Add(1)
	return c.Company.Read(ctx, read)
}

// oneCompanyHost is a Host of one company.
type oneCompanyHost struct{ c *countingCompany }

func (h oneCompanyHost) Companies() []string { return []string{h.c.ID()} }
func (h oneCompanyHost) Company(id string) (Company, bool) {
	return h.c, id == h.c.ID()
}
func (oneCompanyHost) MintAgentToken(_, _, _ string) string { return "" }
func (oneCompanyHost) ResolveSecret(context.Context, string, api.SecretRef) (string, error) {
	return "", os.ErrNotExist
}
func (oneCompanyHost) AgentAPIURL(string) string { return "" }

// TestScanLooksOncePerVersion: the runner's scan looks at a company's state only when
// it changed (store.Company.Version) since a look that found nothing to take — scans
// of an unchanged company (every board write and every 200 ms poll kicks one) read
// nothing — and it copies the state (Snapshot, what pick reads) only when a read in
// place found a scheduled wake without a run: a company being set up (started, an
// agent created) is read, never copied.
func TestScanLooksOncePerVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	inst, err := store.OpenSQLite(ctx, filepath.Join(dir, "instance.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close() })
	id, err := inst.CreateBoardCompany(ctx, "Scan", "SCN")
	if err != nil {
		t.Fatal(err)
	}
	co := &countingCompany{Company: inst.Company(id)}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(oneCompanyHost{co}, Config{Dir: filepath.Join(dir, "heartbeat"), Home: dir, Executable: exe})
	if err != nil {
		t.Fatal(err)
	}
	scans := func(n int, reads, snapshots int64, when string) {
		t.Helper()
		for range n {
			r.scan(ctx)
		}
		if gr, gs := co.reads.Load(), co.snapshots.Load(); gr != reads || gs != snapshots {
			t.Fatalf("%s: %d reads and %d snapshots after %d scans, want %d and %d", when, gr, gs, n, reads, snapshots)
		}
	}
	board := func(kind controlplane.BoardKind, input string) string {
		t.Helper()
		res, err := co.ApplyBoard(ctx, controlplane.BoardOp{Kind: kind, Input: []byte(input)})
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	scans(3, 1, 0, "a stopped company") // nothing to take while it is not running
	if err := co.Start(ctx); err != nil {
		t.Fatal(err)
	}
	scans(3, 2, 0, "after the start") // one new look: the state changed
	agent := board(controlplane.BoardCreateAgent, `{"name":"Eng","role":"engineer"}`)
	scans(2, 3, 0, "after the agent") // no wake: read, not copied
	board(controlplane.BoardCreateIssue, `{"title":"T","assigneeActorId":"`+agent+`"}`)
	// The assignment's wake: copied once for pick, which finds it is not this
	// runner's (the agent names no driver); then idle again.
	scans(3, 4, 1, "after the assigned issue")
}
