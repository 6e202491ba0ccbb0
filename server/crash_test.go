package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/controlplane/store"
	"github.com/agentproof/agentproof/internal/cli"
	"github.com/agentproof/agentproof/internal/raceexit"
)

// childEnv marks a re-executed test binary that runs `agentproof serve`.
const childEnv = "AGENTPROOF_TEST_SERVE_CHILD"

func TestMain(m *testing.M) {
	// As a child process, this binary exits without the race detector's sleep.
	raceexit.Main()
	if os.Getenv(childEnv) == "1" {
		os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	agent.RegisterDrivers()
	os.Exit(m.Run())
}

// serveChild is a real `agentproof serve` process (this test binary re-executed with
// an explicit environment).
type serveChild struct {
	cmd  *exec.Cmd
	addr string
	pid  int
}

func startServe(t testing.TB, home string, flags ...string) *serveChild {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"serve", "--home", home, "--addr", "127.0.0.1:0"}, flags...)...)
	cmd.Env = []string{childEnv + "=1"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no ready line: %v; stderr: %s", err, stderr.String())
	}
	var ready api.Ready
	if err := json.Unmarshal(line, &ready); err != nil || ready.Addr == "" || ready.PID != cmd.Process.Pid {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("ready line %q: %v (child pid %d)", line, err, cmd.Process.Pid)
	}
	return &serveChild{cmd: cmd, addr: ready.Addr, pid: ready.PID}
}

func (c *serveChild) client(t testing.TB, home string) *client.Client {
	t.Helper()
	tok, err := os.ReadFile(filepath.Join(home, "board.token"))
	if err != nil {
		t.Fatal(err)
	}
	return client.New("http://"+c.addr, strings.TrimSpace(string(tok)), nil)
}

// TestServeReadyAndSIGTERM: serve prints its ready line with its pid, answers, and
// exits 0 on SIGTERM; the home's key files are 0600. An ephemeral home (--ephemeral)
// has the same files but no -shm file (its database is locked exclusively).
func TestServeReadyAndSIGTERM(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		flags []string
		shm   bool
	}{{"durable", nil, true}, {"ephemeral", []string{"--ephemeral"}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			c := startServe(t, home, tc.flags...)
			if _, err := c.client(t, home).CreateCompany(context.Background(), "ACME", "AC"); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"board.token", "master.key", "instance.db", "instance.db-wal"} {
				fi, err := os.Stat(filepath.Join(home, f))
				if err != nil || fi.Mode().Perm() != 0o600 {
					t.Fatalf("%s: %v mode %v, want 0600", f, err, fi.Mode().Perm())
				}
			}
			if _, err := os.Stat(filepath.Join(home, "instance.db-shm")); (err == nil) != tc.shm {
				t.Errorf("instance.db-shm exists: %v, want %v", err == nil, tc.shm)
			}
			if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := c.cmd.Wait(); err != nil {
				t.Fatalf("serve after SIGTERM: %v, want exit 0", err)
			}
		})
	}
}

// TestKillNineLoop kills `serve` with SIGKILL at random points while clients apply
// commands, in a bounded loop. After every restart each acknowledged command is
// present exactly once, every command in the state is whole (one idempotency record,
// one applied audit record, one progress comment), a replayed idempotency key returns
// the stored result as a duplicate, and at the end the state equals a replay of the
// whole journal. The same holds for an ephemeral home (--ephemeral: nothing fsynced,
// the database locked exclusively), which is what an attempt's restart and crash
// flows kill and restart.
func TestKillNineLoop(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		flags []string
	}{{"durable", nil}, {"ephemeral", []string{"--ephemeral"}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			killNineLoop(t, tc.flags)
		})
	}
}

// killNineLoop is TestKillNineLoop over a serve child started with flags.
func killNineLoop(t *testing.T, flags []string) {
	const rounds, workers = 6, 4
	home := t.TempDir()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))

	child := startServe(t, home, flags...)
	board := child.client(t, home)
	co, err := board.CreateFixtureCompany(ctx, controlplane.Seed{})
	if err != nil {
		t.Fatal(err)
	}
	if err := co.Start(ctx); err != nil {
		t.Fatal(err)
	}
	open := controlplane.OpenInput{Identity: controlplane.Identity{RunID: "run-1", SessionID: "s-1", CompanyID: "company-1", IssueID: "task-1", AgentID: "actor-1"}, BackendKind: "mock"}
	if err := co.OpenRun(ctx, open); err != nil {
		t.Fatal(err)
	}
	command := func(key string) controlplane.CommandEnvelope {
		return controlplane.CommandEnvelope{RunID: "run-1", IdempotencyKey: key, Command: json.RawMessage(`{"body":"progress ` + key + `","kind":"report_progress"}`)}
	}

	acked := map[string]controlplane.CommandResult{}
	var sent []string
	for round := range rounds {
		var mu sync.Mutex
		var wg sync.WaitGroup
		firstAck := make(chan struct{})
		var once sync.Once
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					key := fmt.Sprintf("r%d-w%d-%d", round, w, i)
					mu.Lock()
					sent = append(sent, key)
					mu.Unlock()
					res, err := co.ApplyCommand(ctx, command(key))
					if err != nil {
						if controlplane.CodeOf(err) != "" {
							t.Errorf("command %s: state-machine error %v", key, err)
						}
						return // the server is gone
					}
					mu.Lock()
					acked[key] = res
					mu.Unlock()
					once.Do(func() { close(firstAck) })
				}
			}()
		}
		// kill at a random point after the round's first acknowledgement, so that
		// every round has acknowledged commands to check however slow the machine
		select {
		case <-firstAck:
		case <-time.After(time.Minute):
			t.Fatalf("round %d: no command acknowledged within a minute", round)
		}
		time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
		if err := child.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		child.cmd.Wait()
		wg.Wait()

		child = startServe(t, home, flags...)
		co = child.client(t, home).Company(co.ID())
		verifyCommands(t, co, acked, sent)
		// the lost-acknowledgement probe: an acknowledged key replayed after the
		// restart returns the stored result as a duplicate
		for key, want := range acked {
			got, err := co.ApplyCommand(ctx, command(key))
			if err != nil {
				t.Fatalf("replaying %s: %v", key, err)
			}
			if got.Disposition != "duplicate" || got.CommandID != want.CommandID {
				t.Fatalf("replaying %s: got %+v, want duplicate of %s", key, got, want.CommandID)
			}
			break
		}
	}
	final, err := co.Serialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := child.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := child.cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v", err)
	}
	inst, err := store.OpenSQLite(ctx, filepath.Join(home, "instance.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	restored, err := inst.Company(co.ID()).Serialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	replayed, err := inst.ReplayFromStart(ctx, co.ID())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(final, restored) || !bytes.Equal(final, replayed) {
		t.Fatal("final state, restored state and whole-journal replay differ")
	}
	if len(acked) == 0 {
		t.Fatal("no command was acknowledged in any round")
	}
	t.Logf("%d rounds, %d commands acknowledged, %d sent", rounds, len(acked), len(sent))
}

func verifyCommands(t *testing.T, co *client.Company, acked map[string]controlplane.CommandResult, sent []string) {
	t.Helper()
	st, err := co.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	records := map[string]int{}
	for _, r := range st.Idempotency {
		records[r.Key]++
	}
	applied := map[string]int{}
	for _, a := range st.Audit {
		if a.Action == "semantic_command.applied" {
			var d struct {
				IdempotencyKey string `json:"idempotencyKey"`
			}
			json.Unmarshal(a.Details, &d)
			applied[d.IdempotencyKey]++
		}
	}
	comments := map[string]int{}
	for _, c := range st.Comments {
		comments[strings.TrimPrefix(c.Body, "progress ")]++
	}
	for key, res := range acked {
		if records[key] != 1 {
			t.Fatalf("acknowledged command %s has %d idempotency records, want 1", key, records[key])
		}
		for _, r := range st.Idempotency {
			if r.Key == key && r.Result.CommandID != res.CommandID {
				t.Fatalf("acknowledged command %s: stored %s, acknowledged %s", key, r.Result.CommandID, res.CommandID)
			}
		}
	}
	for _, key := range sent {
		n := records[key]
		if n > 1 || applied[key] != n || comments[key] != n {
			t.Fatalf("command %s is half-applied: %d idempotency records, %d audit records, %d comments", key, n, applied[key], comments[key])
		}
	}
}

// TestKillNineBoardCommentsExactlyOnce: `serve` is killed with SIGKILL while board
// comments with Idempotency-Keys are in flight, in a bounded loop. After every restart
// each request whose acknowledgement was lost is replayed with its key and body (the
// lost-acknowledgement probe); afterwards every key has exactly one comment, a replay
// of an acknowledged key returns the id it was acknowledged with, and a replay of an
// unacknowledged one returns the id of its single comment.
func TestKillNineBoardCommentsExactlyOnce(t *testing.T) {
	t.Parallel()
	const rounds, workers = 4, 4
	home := t.TempDir()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))

	child := startServe(t, home)
	co, err := child.client(t, home).CreateCompany(ctx, "Crash", "CRA")
	if err != nil {
		t.Fatal(err)
	}
	agent, err := co.CreateAgent(ctx, api.CreateAgentRequest{Name: "Eng", Role: "engineer"})
	if err != nil {
		t.Fatal(err)
	}
	issue, err := co.CreateIssue(ctx, api.CreateIssueRequest{Title: "Crash me", AssigneeActorID: &agent.ID})
	if err != nil {
		t.Fatal(err)
	}
	body := func(key string) string { return "comment " + key }
	keyed := func(key string) (controlplane.BoardResult, error) {
		in, _ := json.Marshal(map[string]string{"issueId": issue.ID, "body": body(key)})
		return co.ApplyBoard(ctx, controlplane.BoardOp{Kind: controlplane.BoardComment, Input: in, IdempotencyKey: key})
	}
	acked := map[string]string{} // key → comment id
	var sent []string
	lost, committedUnacked := 0, 0
	for round := range rounds {
		var mu sync.Mutex
		var wg sync.WaitGroup
		firstAck := make(chan struct{})
		var once sync.Once
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					key := fmt.Sprintf("r%d-w%d-%d", round, w, i)
					mu.Lock()
					sent = append(sent, key)
					mu.Unlock()
					res, err := keyed(key)
					if err != nil {
						if controlplane.CodeOf(err) != "" {
							t.Errorf("comment %s: state-machine error %v", key, err)
						}
						return // the server is gone
					}
					mu.Lock()
					acked[key] = res.ID
					mu.Unlock()
					once.Do(func() { close(firstAck) })
				}
			}()
		}
		select {
		case <-firstAck:
		case <-time.After(time.Minute):
			t.Fatalf("round %d: no comment acknowledged within a minute", round)
		}
		time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
		if err := child.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		child.cmd.Wait()
		wg.Wait()

		child = startServe(t, home)
		co = child.client(t, home).Company(co.ID())
		pre, err := co.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		committed := map[string]bool{}
		for _, c := range pre.Comments {
			committed[strings.TrimPrefix(c.Body, "comment ")] = true
		}
		for _, key := range sent {
			if _, ok := acked[key]; ok {
				continue
			}
			lost++
			if committed[key] {
				committedUnacked++
			}
			res, err := keyed(key)
			if err != nil {
				t.Fatalf("replaying %s: %v", key, err)
			}
			acked[key] = res.ID
		}
		st, err := co.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string][]string{}
		for _, c := range st.Comments {
			key := strings.TrimPrefix(c.Body, "comment ")
			ids[key] = append(ids[key], c.ID)
		}
		for _, key := range sent {
			if len(ids[key]) != 1 || ids[key][0] != acked[key] {
				t.Fatalf("key %s: comments %v, acknowledged %s: want exactly one, the acknowledged one", key, ids[key], acked[key])
			}
		}
		// an acknowledged key replayed after the restart answers its original id
		for key, id := range acked {
			res, err := keyed(key)
			if err != nil || res.ID != id {
				t.Fatalf("replaying acknowledged %s: %+v %v, want %s", key, res, err, id)
			}
			break
		}
	}
	if err := child.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := child.cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v", err)
	}
	t.Logf("%d rounds, %d comments sent, %d unacknowledged and replayed with their key, %d of those already committed", rounds, len(sent), lost, committedUnacked)
}
