package heartbeat_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/server"
	"github.com/agentproof/agentproof/server/heartbeat"
)

// editHome is the edit-home exec agent: it edits $AGENT_HOME with ordinary file
// operations (mode edit), prints "<path> <sha256>" for every regular file of it (mode
// report), or writes memory.md and waits for $AGENTPROOF_WORKSPACE/proceed (mode race).
func editHome(args []string) int {
	home := os.Getenv("AGENT_HOME")
	if home == "" || len(args) != 1 {
		fmt.Fprintln(os.Stderr, "edit-home: AGENT_HOME and a mode are required")
		return 2
	}
	must := func(err error) {
		if err != nil {
			fmt.Fprintln(os.Stderr, "edit-home:", err)
			os.Exit(1)
		}
	}
	switch args[0] {
	case "edit":
		f, err := os.OpenFile(filepath.Join(home, "memory.md"), os.O_APPEND|os.O_WRONLY, 0)
		must(err)
		_, err = f.WriteString("turn 2\n")
		must(err)
		must(f.Close())
		must(os.Remove(filepath.Join(home, "old.txt")))
		must(os.MkdirAll(filepath.Join(home, "notes"), 0o700))
		must(os.WriteFile(filepath.Join(home, "notes", "new.txt"), []byte("new\n"), 0o600))
		must(os.Symlink("/etc/passwd", filepath.Join(home, "evil")))
		must(os.Symlink("/etc", filepath.Join(home, "etcdir")))
		must(syscall.Mkfifo(filepath.Join(home, "pipe"), 0o600))
	case "report":
		must(filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			rel, _ := filepath.Rel(home, p)
			fmt.Printf("%s %s\n", filepath.ToSlash(rel), hex.EncodeToString(sum[:]))
			return nil
		}))
	case "race":
		must(os.WriteFile(filepath.Join(home, "memory.md"), []byte("the run's version\n"), 0o600))
		deadline := time.Now().Add(settle)
		for {
			if _, err := os.Stat(filepath.Join(os.Getenv("AGENTPROOF_WORKSPACE"), "proceed")); err == nil {
				return 0
			}
			if time.Now().After(deadline) {
				return 3
			}
			time.Sleep(20 * time.Millisecond)
		}
	default:
		return 2
	}
	return 0
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// putHomeFile uploads content and writes it at path of actor's home.
func putHomeFile(ctx context.Context, t *testing.T, co *client.Company, actor, path string, content []byte) {
	t.Helper()
	ref, err := co.PutBlob(ctx, controlplane.BlobPut{Content: content})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := co.PutFile(ctx, api.PutFileRequest{Scope: controlplane.FileScopeAgentHome, OwnerID: actor, Path: path, SHA256: ref.SHA256}); err != nil {
		t.Fatal(err)
	}
}

// homeListing returns actor's home files through the public file API: path → SHA-256,
// each download checked byte for byte against the listing.
func homeListing(ctx context.Context, t *testing.T, co *client.Company, actor string) (map[string]string, map[string][]byte) {
	t.Helper()
	list, err := co.Files(ctx, controlplane.FileScopeAgentHome, actor)
	if err != nil {
		t.Fatal(err)
	}
	shas, bodies := map[string]string{}, map[string][]byte{}
	for _, f := range list.Files {
		d, err := co.FileContent(ctx, f.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d.SHA256 != f.SHA256 || int64(len(d.Bytes)) != f.ByteSize {
			t.Fatalf("%s: downloaded %s (%d bytes), listed %s (%d bytes)", f.Path, d.SHA256, len(d.Bytes), f.SHA256, f.ByteSize)
		}
		shas[f.Path], bodies[f.Path] = f.SHA256, d.Bytes
	}
	if list.HomeDigest != controlplane.HomeDigest(shas) {
		t.Fatal("the listing's home digest is not its files'")
	}
	return shas, bodies
}

// TestAgentHomeSavedAndMaterialised: a real agent process edits its AGENT_HOME with
// ordinary file operations. The save receipt lists exactly its changes (an append, a
// new nested file), its deletion and the 8 MiB binary verified unchanged by hash — and
// copies only the changed bytes; the symbolic link it left is a problem, never read.
// The public file API serves the new bytes. Before the next run, after a server
// restart and with the directory damaged on disk, the home is materialised from the
// store: the next agent sees exactly the stored files.
func TestAgentHomeSavedAndMaterialised(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in := startInstance(t)
	co := in.company(ctx)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	agentFor := func(mode string) string {
		return createAgent(ctx, t, co, map[string]any{"driver": "exec",
			"driverConfig": map[string]any{"command": exe, "args": []string{"edit-home", mode}, "timeoutMs": settle.Milliseconds()}})
	}
	actor := agentFor("edit")
	big := bytes.Repeat([]byte{0, 1, 0xff, 'x'}, 2<<20) // 8 MiB
	putHomeFile(ctx, t, co, actor, "memory.md", []byte("turn 1\n"))
	putHomeFile(ctx, t, co, actor, "old.txt", []byte("to delete\n"))
	putHomeFile(ctx, t, co, actor, "bin/model.bin", big)

	_, wakes := createIssue(ctx, t, co, "Edit your home", "", "", actor)
	runID := heartbeat.RunID(co.ID(), wakes[0])
	rec := waitRecord(t, in, runID, "the edit run", finished)
	if rec.Termination == nil || rec.Termination.ExitCode == nil || *rec.Termination.ExitCode != 0 || rec.HomeReceiptID == "" || rec.HomeSaveError != "" {
		t.Fatalf("record %+v", rec)
	}
	if want := filepath.Join(in.home, heartbeat.HomeDirName, co.ID(), actor); rec.AgentHome != want {
		t.Fatalf("agentHome %q, want %q", rec.AgentHome, want)
	}
	rcs, err := co.HomeReceipts(ctx, actor, runID)
	if err != nil || len(rcs) != 1 || rcs[0].ID != rec.HomeReceiptID {
		t.Fatalf("receipts %+v %v", rcs, err)
	}
	rc := rcs[0]
	memory := []byte("turn 1\nturn 2\n")
	changes := map[string]controlplane.HomeChange{}
	for _, c := range rc.Changes {
		changes[c.Path] = c
	}
	if len(changes) != 2 || changes["memory.md"].OldSHA256 != sha([]byte("turn 1\n")) || changes["memory.md"].NewSHA256 != sha(memory) ||
		changes["notes/new.txt"].OldSHA256 != "" || changes["notes/new.txt"].NewSHA256 != sha([]byte("new\n")) {
		t.Fatalf("changes %+v", rc.Changes)
	}
	if len(rc.Deletions) != 1 || rc.Deletions[0].Path != "old.txt" || rc.Deletions[0].OldSHA256 != sha([]byte("to delete\n")) {
		t.Fatalf("deletions %+v", rc.Deletions)
	}
	if len(rc.Unchanged) != 1 || rc.Unchanged[0].Path != "bin/model.bin" || rc.Unchanged[0].SHA256 != sha(big) || rc.Unchanged[0].ByteSize != int64(len(big)) {
		t.Fatalf("unchanged %+v", rc.Unchanged)
	}
	if rc.CopiedBytes != int64(len(memory)+len("new\n")) {
		t.Fatalf("copied %d bytes, want only the changed files' %d", rc.CopiedBytes, len(memory)+len("new\n"))
	}
	slices.Sort(rc.Problems)
	if len(rc.Problems) != 3 || !strings.HasPrefix(rc.Problems[0], "etcdir: not a regular file") ||
		!strings.HasPrefix(rc.Problems[1], "evil: not a regular file") || !strings.HasPrefix(rc.Problems[2], "pipe: not a regular file") {
		t.Fatalf("problems %q: want the two links and the FIFO, never followed or opened", rc.Problems)
	}
	shas, bodies := homeListing(ctx, t, co, actor)
	if len(shas) != 3 || !bytes.Equal(bodies["memory.md"], memory) || !bytes.Equal(bodies["bin/model.bin"], big) || string(bodies["notes/new.txt"]) != "new\n" {
		t.Fatalf("home after the save: %v", shas)
	}
	if rc.HomeDigest != controlplane.HomeDigest(shas) {
		t.Fatal("the receipt's digest is not the home's")
	}

	// restart; damage the directory; the next run sees the store's home
	in.restart()
	co = in.handle(co)
	dir := rec.AgentHome
	if err := os.Remove(filepath.Join(dir, "memory.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "model.bin"), []byte("truncated"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stray.txt"), []byte("not stored"), 0o600); err != nil {
		t.Fatal(err)
	}
	reporter := agentFor("report")
	// the reporter reads the first agent's home: give it the same files
	for p, b := range bodies {
		putHomeFile(ctx, t, co, reporter, p, b)
	}
	if err := os.MkdirAll(filepath.Join(in.home, heartbeat.HomeDirName, co.ID(), reporter), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in.home, heartbeat.HomeDirName, co.ID(), reporter, "stray.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, wakes = createIssue(ctx, t, co, "Report your home", "", "", reporter)
	runID = heartbeat.RunID(co.ID(), wakes[0])
	rec = waitRecord(t, in, runID, "the report run", finished)
	stdout, err := os.ReadFile(filepath.Join(in.home, server.HeartbeatDir, "runs", runID, "stdout.log"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for p, s := range shas {
		want = append(want, p+" "+s)
	}
	slices.Sort(want)
	got := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	slices.Sort(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the agent saw\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	rcs, _ = co.HomeReceipts(ctx, reporter, runID)
	if len(rcs) != 1 || len(rcs[0].Changes) != 0 || len(rcs[0].Deletions) != 0 || len(rcs[0].Unchanged) != 3 || rcs[0].CopiedBytes != 0 {
		t.Fatalf("the reporter's receipt %+v: want every file verified unchanged, nothing copied", rcs)
	}
}

// TestAgentHomeConflict: the board changes a home file while the run that also changed
// it is running. The save keeps the board's file and the run's version as a conflict
// (never silently overwritten); resolving it against a stale current hash is 409, against
// the reviewed one it applies the run's bytes; a Stop'd run is saved too.
func TestAgentHomeConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in := startInstance(t)
	co := in.company(ctx)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	workspace := t.TempDir()
	actor := createAgent(ctx, t, co, map[string]any{"driver": "exec", "cwd": workspace,
		"driverConfig": map[string]any{"command": exe, "args": []string{"edit-home", "race"}, "timeoutMs": settle.Milliseconds()}})
	putHomeFile(ctx, t, co, actor, "memory.md", []byte("base\n"))
	_, wakes := createIssue(ctx, t, co, "Race the board", "", "", actor)
	runID := heartbeat.RunID(co.ID(), wakes[0])
	waitFor(t, "the run to write memory.md", func() (bool, error) {
		b, err := os.ReadFile(filepath.Join(in.home, heartbeat.HomeDirName, co.ID(), actor, "memory.md"))
		return err == nil && string(b) == "the run's version\n", nil
	})
	board := []byte("the board's version\n")
	putHomeFile(ctx, t, co, actor, "memory.md", board)
	if err := os.WriteFile(filepath.Join(workspace, "proceed"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rec := waitRecord(t, in, runID, "the race run", finished)
	if rec.HomeReceiptID == "" {
		t.Fatalf("record %+v: no receipt", rec)
	}
	shas, bodies := homeListing(ctx, t, co, actor)
	if !bytes.Equal(bodies["memory.md"], board) {
		t.Fatalf("memory.md is %q: the board's version was overwritten", bodies["memory.md"])
	}
	cs, err := co.FileConflicts(ctx, actor, controlplane.ConflictOpen)
	if err != nil || len(cs) != 1 {
		t.Fatalf("conflicts %+v %v", cs, err)
	}
	fc := cs[0]
	if fc.Path != "memory.md" || fc.BaseSHA256 != sha([]byte("base\n")) || fc.CurrentSHA256 != sha(board) || fc.IncomingSHA256 != sha([]byte("the run's version\n")) || fc.RunID != runID {
		t.Fatalf("conflict %+v", fc)
	}
	incoming, err := co.Blob(ctx, fc.IncomingSHA256)
	if err != nil || string(incoming) != "the run's version\n" {
		t.Fatalf("the run's version is not kept: %q %v", incoming, err)
	}
	stale := sha([]byte("base\n"))
	if _, err := co.ResolveFileConflict(ctx, fc.ID, api.ResolveFileConflictRequest{Resolution: controlplane.ResolveTakeIncoming, CurrentSHA256: &stale}); controlplane.CodeOf(err) != controlplane.CodeFileConflictStale {
		t.Fatalf("resolve against a stale hash: %v", err)
	}
	current := shas["memory.md"]
	if _, err := co.ResolveFileConflict(ctx, fc.ID, api.ResolveFileConflictRequest{Resolution: controlplane.ResolveTakeIncoming, CurrentSHA256: &current}); err != nil {
		t.Fatal(err)
	}
	if _, bodies := homeListing(ctx, t, co, actor); string(bodies["memory.md"]) != "the run's version\n" {
		t.Fatalf("after take_incoming memory.md is %q", bodies["memory.md"])
	}

	// the exec agent left its run open, so it failed: Retry it, and Stop the retry;
	// a Stop'd run leaves a receipt too
	if rec.Status != controlplane.RunFailed {
		t.Fatalf("race run %s, want failed", rec.Status)
	}
	if err := os.Remove(filepath.Join(workspace, "proceed")); err != nil {
		t.Fatal(err)
	}
	retry, err := in.board().RetryHeartbeatRun(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	second := retry.RetryRunID
	waitRecord(t, in, second, "the retry to start", func(r api.HeartbeatRun) bool { return r.ProcessStartedAt != "" })
	if _, err := in.board().CancelRun(ctx, second, ""); err != nil {
		t.Fatal(err)
	}
	rec = waitRecord(t, in, second, "the stopped run", finished)
	if rec.Status != controlplane.RunCancelled || rec.HomeReceiptID == "" {
		t.Fatalf("stopped run %+v: want cancelled with a receipt", rec)
	}
}

// TestStopWithIdempotencyKey: a Stop with an Idempotency-Key is answered the same (202,
// the same intent) when replayed, also after a server restart; the same key with another
// body is 409; a second key joins (200) and replays as joined.
func TestStopWithIdempotencyKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in := startInstance(t)
	co := in.company(ctx)
	runID := hangAgent(ctx, t, co, 4*time.Minute)
	waitRecord(t, in, runID, "the hang process", func(r api.HeartbeatRun) bool { return r.ProcessStartedAt != "" })
	stop := func(body, key string) (int, []byte) {
		status, b := documentedCallKey(t, in, "POST", "/api/heartbeat-runs/{run}/cancel", map[string]string{"run": runID}, body, key)
		return status, b
	}
	const body = `{"cancellationRequestId":"7a0c3f2e-9d51-4b8e-8f0a-1c2d3e4f5a6b"}`
	status, first := stop(body, "stop-key-1")
	if status != 202 {
		t.Fatalf("first Stop: %d %s", status, first)
	}
	if status, again := stop(body, "stop-key-1"); status != 202 || !bytes.Equal(again, first) {
		t.Fatalf("replayed Stop: %d %s, want 202 %s", status, again, first)
	}
	if status, b := stop(`{}`, "stop-key-1"); status != 409 || !strings.Contains(string(b), "idempotency_conflict") {
		t.Fatalf("same key, other body: %d %s", status, b)
	}
	status, joined := stop(body, "stop-key-2")
	if status != 200 {
		t.Fatalf("joining Stop: %d %s", status, joined)
	}
	waitRecord(t, in, runID, "the stopped run", finished)
	in.restart()
	if status, again := stop(body, "stop-key-1"); status != 202 || !bytes.Equal(again, first) {
		t.Fatalf("replayed Stop after restart: %d %s, want 202 %s", status, again, first)
	}
	if status, again := stop(body, "stop-key-2"); status != 200 || !bytes.Equal(again, joined) {
		t.Fatalf("replayed joining Stop after restart: %d %s, want 200 %s", status, again, joined)
	}
	if status, b := stop(`{}`, strings.Repeat("k", api.MaxIdempotencyKeyBytes+1)); status != 400 {
		t.Fatalf("a key over the bound: %d %s", status, b)
	}
}
