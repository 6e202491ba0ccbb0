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

// countingCompany is a durable company whose snapshots are counted.
type countingCompany struct {
	*store.Company
	snapshots atomic.Int64
}

func (c *countingCompany) Snapshot(ctx context.Context) (controlplane.State, error) {
	c.snapshots.Add(1)
	return c.Company.Snapshot(ctx)
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

// TestScanLooksOncePerVersion: the runner's scan takes a snapshot of a company only
// when the company's state changed (store.Company.Version) since a look that found
// nothing to take; scans of an unchanged company (every board write and every 200 ms
// poll kicks one) read no state at all.
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
	scans := func(n int, want int64, when string) {
		t.Helper()
		for range n {
			r.scan(ctx)
		}
		if got := co.snapshots.Load(); got != want {
			t.Fatalf("%s: %d snapshots after %d scans, want %d", when, got, n, want)
		}
	}
	scans(3, 1, "a stopped company") // nothing to take while it is not running
	if err := co.Start(ctx); err != nil {
		t.Fatal(err)
	}
	scans(3, 2, "after the start") // one new look: the state changed
	if _, err := co.ApplyBoard(ctx, controlplane.BoardOp{Kind: controlplane.BoardCreateProject, Input: []byte(`{"name":"P"}`)}); err != nil {
		t.Fatal(err)
	}
	scans(2, 3, "after a board write")
}
