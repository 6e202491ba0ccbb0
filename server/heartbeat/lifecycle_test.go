package heartbeat_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/catalog"
	"github.com/agentproof/agentproof/client"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/server"
	"github.com/agentproof/agentproof/server/heartbeat"
)

// cellOf returns the default catalog's cell of profile and case.
func cellOf(t *testing.T, profile, caseID string) *catalog.Cell {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cat.Cells {
		if c.Profile.ID == profile && c.Case.ID == caseID {
			return c
		}
	}
	t.Fatalf("no cell %s × %s in the default catalog", profile, caseID)
	return nil
}

// TestReferenceReachesDone: a task assigned to the reference agent reaches done with the
// marker comment through a real server, the runner and a real child process.
func TestReferenceReachesDone(t *testing.T) {
	t.Parallel()
	a := newAttempt(t, cellOf(t, "reference", "message-marker"), "n0ncedone1")
	recs := waitRuns(t, a.in, a.co, 1)
	st := snapshot(t, a.company())
	if task := taskOf(st, a.task); task == nil || task.Status != "done" {
		t.Fatalf("task is %+v, want done", task)
	}
	if !slices.ContainsFunc(st.Comments, func(c *controlplane.Comment) bool { return strings.Contains(c.Body, a.r.Marker) }) {
		t.Fatalf("no comment carries the marker %s", a.r.Marker)
	}
	rec := recs[0]
	if rec.Status != "succeeded" || rec.Termination == nil || rec.Termination.ExitCode == nil || *rec.Termination.ExitCode != 0 {
		t.Fatalf("record %+v, want a succeeded run whose process exited 0", rec)
	}
	// the record and the list answer the schemas /openapi.json documents for them
	if status, body := documentedCall(t, a.in, "GET", "/api/heartbeat-runs/{run}", map[string]string{"run": rec.RunID}, ""); status != 200 {
		t.Fatalf("GET the record: %d %s", status, body)
	}
	if status, body := documentedCall(t, a.in, "GET", "/api/companies/{company}/heartbeat-runs", map[string]string{"company": a.co.ID()}, ""); status != 200 {
		t.Fatalf("GET the records: %d %s", status, body)
	}
	if rec.RunID != heartbeat.RunID(a.co.ID(), rec.WakeID) || rec.WakeReason != "issue_assigned" || rec.Workspace != a.workspace {
		t.Fatalf("record %+v does not describe the assignment wake in the workspace %s", rec, a.workspace)
	}
	checkLaunch(t, rec, st)
}

// checkLaunch: the record says what the runner launched — observed, not configured:
// the executable's path and SHA-256 (of the file itself), the process id the
// termination reports with its start time from /proc, the runtime mode, the
// environment the run executed in and the argv shape without the prompt or a secret.
func checkLaunch(t *testing.T, rec api.HeartbeatRun, st controlplane.State) {
	t.Helper()
	l := rec.Launch
	if l == nil {
		t.Fatal("the record has no launch facts")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	envs := map[string]string{}
	for _, e := range st.Environments {
		envs[e.ID] = e.Kind
	}
	switch {
	case l.Driver != "reference" || l.AdapterType != "agentproof_builtin" || l.Provider != "agentproof" || l.CLIName != "":
		t.Errorf("launch driver facts %+v", l)
	case l.Binary != exe || l.BinarySHA256 != hex.EncodeToString(sum[:]):
		t.Errorf("launch binary %s %s, want %s %x", l.Binary, l.BinarySHA256, exe, sum)
	case l.PID == 0 || l.PID != rec.Termination.PID || l.ProcessStartTicks == 0:
		t.Errorf("launch process %d started at tick %d; the termination says pid %d", l.PID, l.ProcessStartTicks, rec.Termination.PID)
	case l.RuntimeMode != heartbeat.RuntimeNative || l.ExecutionTarget != "local" || envs[l.EnvironmentID] != controlplane.LocalEnvironment:
		t.Errorf("launch runtime %s target %s environment %s", l.RuntimeMode, l.ExecutionTarget, l.EnvironmentID)
	case strings.Join(l.Argv, " ") != "agentproof <value> <value>" || len(l.Problems) != 0: // agent reference
		t.Errorf("launch argv %q problems %q", l.Argv, l.Problems)
	}
}

// TestQuestionRestartNoDuplicateNoLostAnswer: the agent asks, the run ends, the server
// restarts while the question is pending, the board's answer schedules a wake and a
// second run resumes and completes: exactly two runs, the second carrying the answer.
func TestQuestionRestartNoDuplicateNoLostAnswer(t *testing.T) {
	t.Parallel()
	// The same on an ephemeral home (an attempt's): nothing fsynced, the database
	// locked by the server for its life, reopened by the restarted server.
	for _, ephemeral := range []bool{false, true} {
		t.Run(fmt.Sprintf("ephemeral=%v", ephemeral), func(t *testing.T) {
			t.Parallel()
			questionRestart(t, startInstanceOn(t, server.RunnerOptions{}, ephemeral))
		})
	}
}

// questionRestart is TestQuestionRestartNoDuplicateNoLostAnswer in the instance in.
func questionRestart(t *testing.T, in *instance) {
	a := newAttemptIn(t, in, cellOf(t, "reference", "structured-question-restart-resume"), "n0ncerestart")
	waitRuns(t, a.in, a.co, 1)
	q := a.pending("questions")
	if q == nil {
		t.Fatal("the agent asked no question")
	}
	a.in.restart()
	if recs := waitRuns(t, a.in, a.co, 1); len(recs) != 1 {
		t.Fatalf("%d runs after the restart, want still 1", len(recs))
	}
	a.resolve(q.ID, "answered", map[string]any{"answers": []any{map[string]any{"questionId": "colour", "optionLabel": a.r.QuestionAnswer.OptionLabel}}})
	recs := waitRuns(t, a.in, a.co, 2)
	st := snapshot(t, a.company())
	if len(st.Runs) != 2 || len(recs) != 2 {
		t.Fatalf("%d runs and %d records, want 2", len(st.Runs), len(recs))
	}
	second := st.Runs[1]
	var payload struct {
		InteractionID string `json:"interactionId"`
		Outcome       string `json:"outcome"`
	}
	_ = json.Unmarshal(second.Wake.Payload, &payload)
	if second.Status != "succeeded" || second.Wake.Reason != "interaction_resolved" || payload.InteractionID != q.ID || payload.Outcome != "answered" {
		t.Fatalf("second run %s (%s, wake %s %s) does not carry the answer", second.ID, second.Status, second.Wake.Reason, second.Wake.Payload)
	}
	if task := taskOf(st, a.task); task.Status != "done" {
		t.Fatalf("task is %s, want done", task.Status)
	}
	if !slices.ContainsFunc(st.Comments, func(c *controlplane.Comment) bool {
		return strings.Contains(c.Body, a.r.QuestionAnswer.OptionLabel) || strings.Contains(c.Body, a.r.Marker)
	}) {
		t.Fatal("no comment shows the answer was used")
	}
}

// hangAgent creates an agent running fixture:hang with timeout and an issue for it, and
// returns the run id of its assignment wake.
func hangAgent(ctx context.Context, t *testing.T, co *client.Company, timeout time.Duration) string {
	t.Helper()
	actor := createAgent(ctx, t, co, map[string]any{"driver": "fixture:hang", "driverConfig": map[string]any{"timeoutMs": timeout.Milliseconds()}})
	_, wakes := createIssue(ctx, t, co, "Hang", "", "", actor)
	if len(wakes) != 1 {
		t.Fatalf("issue creation scheduled %v, want one wake", wakes)
	}
	return heartbeat.RunID(co.ID(), wakes[0])
}

// TestHangStoppedAtTimeout: fixture:hang ignores SIGTERM; at its timeout the process
// group gets SIGTERM then SIGKILL and the run is failed with timedOut and the
// termination summary.
func TestHangStoppedAtTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in := startInstance(t)
	co := in.company(ctx)
	runID := hangAgent(ctx, t, co, 5*time.Second)
	rec := waitRecord(t, in, runID, "the hang run to finish", finished)
	term := rec.Termination
	if rec.Status != "failed" || term == nil || !term.TimedOut || !term.Started || term.ExitCode != nil {
		t.Fatalf("record %+v, want a failed run whose process timed out", rec)
	}
	// hang ignores SIGTERM once its handler is installed; a child still starting up
	// (slow under -race on a loaded machine) may die of the SIGTERM itself.
	escalated := slices.Equal(term.SignalsSent, []string{"SIGTERM", "SIGKILL"}) && term.Signal == "SIGKILL"
	early := slices.Equal(term.SignalsSent, []string{"SIGTERM"}) && term.Signal == "SIGTERM"
	if !escalated && !early {
		t.Fatalf("signals sent %v, killed by %q; want SIGTERM, then SIGKILL unless SIGTERM ended it", term.SignalsSent, term.Signal)
	}
	run := findRun(t, snapshot(t, co), runID)
	var res controlplane.NativeRunResult
	if err := json.Unmarshal(run.Result, &res); err != nil || !strings.Contains(res.Summary, "timed out") {
		t.Fatalf("run result %s does not carry the termination summary", run.Result)
	}
}

func findRun(t *testing.T, st controlplane.State, id string) *controlplane.Run {
	t.Helper()
	for _, r := range st.Runs {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("run %s not found", id)
	return nil
}

// stopStatus is the HTTP status class of a Stop's error (200 for none).
func stopCode(err error) controlplane.Code {
	if err == nil {
		return ""
	}
	var e *controlplane.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return controlplane.Code(err.Error())
}

// TestStopRunningHang: Stop with a UUID reserves native-cancellation:<uuid> and stops the
// process group; the same UUID again joins (idempotent), another UUID is a conflict, a
// malformed one is invalid; after the run is cancelled only the
// same UUID still joins.
func TestStopRunningHang(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in := startInstance(t)
	co := in.company(ctx)
	runID := hangAgent(ctx, t, co, 4*time.Minute)
	waitRecord(t, in, runID, "the hang process to start", func(r api.HeartbeatRun) bool { return r.ProcessStartedAt != "" })
	b := in.board()
	first, other := uuid.NewString(), uuid.NewString()
	if _, err := b.CancelRun(ctx, runID, "not-a-uuid"); stopCode(err) != controlplane.CodeCancellationRequestIDInvalid {
		t.Fatalf("malformed UUID: %v, want %s", err, controlplane.CodeCancellationRequestIDInvalid)
	}
	res, err := b.CancelRun(ctx, runID, first)
	if err != nil || res.Disposition != "reserved" || res.Intent.IntentID != heartbeat.IntentPrefix+first || res.Intent.Actor != heartbeat.LocalBoardActor {
		t.Fatalf("first Stop: %+v, %v", res, err)
	}
	steps := []struct {
		name, id    string
		disposition api.CancelDisposition
		code        controlplane.Code
	}{
		{"same UUID again", first, "joined", ""},
		{"another UUID", other, "", controlplane.CodeCancellationConflict},
		{"malformed UUID", "1234", "", controlplane.CodeCancellationRequestIDInvalid},
	}
	// (An omitted id joins the reserved intent only while the run is still running,
	// which this test cannot hold open without timing; TestDecideStop covers it.)
	for _, s := range steps {
		res, err := b.CancelRun(ctx, runID, s.id)
		if stopCode(err) != s.code || (s.code == "" && (res.Disposition != s.disposition || res.Intent.RequestID != first)) {
			t.Fatalf("%s: %+v, %v; want code %q disposition %q", s.name, res, err, s.code, s.disposition)
		}
	}
	rec := waitRecord(t, in, runID, "the stopped run to finish", finished)
	if rec.Status != "cancelled" || rec.Cancellation == nil || rec.Cancellation.IntentID != heartbeat.IntentPrefix+first || !rec.Termination.Aborted {
		t.Fatalf("record %+v, want a cancelled run with the intent", rec)
	}
	if !rec.Termination.Started || len(rec.Termination.SignalsSent) == 0 || rec.Termination.SignalsSent[0] != "SIGTERM" {
		t.Fatalf("signals %v, want SIGTERM first", rec.Termination.SignalsSent)
	}
	if run := findRun(t, snapshot(t, co), runID); run.Status != "cancelled" {
		t.Fatalf("run is %s, want cancelled", run.Status)
	}
	for _, s := range []struct {
		name, id string
		code     controlplane.Code
	}{
		{"same UUID on the terminal run", first, ""},
		{"another UUID on the terminal run", other, controlplane.CodeCancellationConflict},
		{"omitted id on the terminal run", "", controlplane.CodeCancellationConflict},
	} {
		if _, err := b.CancelRun(ctx, runID, s.id); stopCode(err) != s.code {
			t.Fatalf("%s: %v, want code %q", s.name, err, s.code)
		}
	}
	if _, err := b.CancelRun(ctx, "hb-no-such-run", first); stopCode(err) != "run_missing" {
		t.Fatalf("unknown run: %v, want run_missing", err)
	}
	agentTok := in.sv.MintAgentToken(co.ID(), "x", runID)
	if _, err := client.New(in.sv.URL, agentTok, nil).CancelRun(ctx, runID, first); stopCode(err) != "forbidden" {
		t.Fatalf("Stop with an agent token: %v, want forbidden", err)
	}
}

// TestSecretNeverStored: an exec agent whose env binds a secret receives its value in
// its environment and prints it; after the run no file of the instance home holds the
// value (redact.Set.ScanTree), the stored stdout shows the redaction and the record
// counts it (Termination.SecretsRedacted).
func TestSecretNeverStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in := startInstance(t)
	co := in.company(ctx)
	value := "agentproof-test-" + strings.ReplaceAll(uuid.NewString(), "-", "")
	ref, err := co.CreateSecret(ctx, api.CreateSecretRequest{Name: "provider key", Key: "OPENAI_API_KEY", Value: value})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	actor := createAgent(ctx, t, co, map[string]any{"driver": "exec",
		"driverConfig": map[string]any{"command": exe, "args": []string{"print-env"}, "timeoutMs": settle.Milliseconds()},
		"env":          map[string]any{"OPENAI_API_KEY": ref}})
	_, wakes := createIssue(ctx, t, co, "Print the environment", "", "", actor)
	runID := heartbeat.RunID(co.ID(), wakes[0])
	rec := waitRecord(t, in, runID, "the exec run to finish", finished)
	if rec.Termination == nil || rec.Termination.ExitCode == nil || *rec.Termination.ExitCode != 0 {
		t.Fatalf("record %+v, want an exit 0", rec)
	}
	stdout, err := os.ReadFile(filepath.Join(in.home, server.HeartbeatDir, "runs", runID, "stdout.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(stdout), "OPENAI_API_KEY="+redact.Redacted) {
		t.Fatalf("stored stdout does not show the redacted secret:\n%s", stdout)
	}
	if strings.Contains(string(stdout), "AGENTPROOF_RUN_TOKEN=apr1.") {
		t.Fatal("the run token was stored in the evidence")
	}
	// the record says the agent printed a secret, so the harness can fail the attempt
	if rec.Termination.SecretsRedacted != 1 {
		t.Fatalf("secretsRedacted = %d, want 1 (stdout)", rec.Termination.SecretsRedacted)
	}
	in.restart() // commit everything the store holds to disk
	leaks, err := redact.NewSet(value).ScanTree(in.home, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(leaks) > 0 {
		t.Fatalf("the secret value is stored in the instance home: %+v", leaks)
	}
}

// TestExecAgentLeftRunOpen: an exec agent that exits 0 without completing its run gets
// a run failed by the runner whose summary (the run's result and the record's
// termination summary) says so and names the calls that complete a run
// (agent.ExecLeftOpen), and whose termination is marked leftOpen; one that exits
// non-zero, or completes its own run, does not.
func TestExecAgentLeftRunOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in := startInstance(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		mode     string
		status   controlplane.RunStatus
		leftOpen bool
	}{
		{"print-env", controlplane.RunFailed, true},
		{"exit-3", controlplane.RunFailed, false},
		{"complete-native", controlplane.RunSucceeded, false},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			co := in.company(ctx)
			actor := createAgent(ctx, t, co, map[string]any{"driver": "exec",
				"driverConfig": map[string]any{"command": exe, "args": []string{c.mode}, "timeoutMs": settle.Milliseconds()}})
			_, wakes := createIssue(ctx, t, co, "Exec agent "+c.mode, "", "", actor)
			runID := heartbeat.RunID(co.ID(), wakes[0])
			rec := waitRecord(t, in, runID, "the exec run to finish", finished)
			if rec.Status != c.status || rec.Termination == nil {
				t.Fatalf("record %+v, want status %s", rec, c.status)
			}
			var run *controlplane.Run
			for _, r := range snapshot(t, co).Runs {
				if r.ID == runID {
					run = r
				}
			}
			var res struct {
				Summary string `json:"summary"`
			}
			if run == nil || json.Unmarshal(run.Result, &res) != nil {
				t.Fatalf("run %s has no result", runID)
			}
			if got := strings.HasPrefix(rec.Termination.Summary, agent.ExecLeftOpen+"; exited with code 0"); got != c.leftOpen {
				t.Errorf("termination summary %q: says the run was left open = %v, want %v", rec.Termination.Summary, got, c.leftOpen)
			}
			if rec.Termination.LeftOpen != c.leftOpen {
				t.Errorf("termination leftOpen %v, want %v", rec.Termination.LeftOpen, c.leftOpen)
			}
			if got := strings.HasPrefix(res.Summary, agent.ExecLeftOpen); got != c.leftOpen {
				t.Errorf("run result summary %q: says the run was left open = %v, want %v", res.Summary, got, c.leftOpen)
			}
			if c.mode == "complete-native" && res.Summary != "completed by the agent itself" {
				t.Errorf("the agent's own completion was replaced: %q", res.Summary)
			}
		})
	}
}

// TestOrphanedRunAfterKill: `agentproof serve` is killed with SIGKILL while its runner
// has a fixture:hang process running. The restarted server completes that run as
// interrupted ("orphaned") and starts no second process for it; the process died with
// the server. Retry then starts exactly one new run bound to it (retryOf); a second
// Retry is 409.
func TestOrphanedRunAfterKill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "serve", "--home", home)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var ready api.Ready
	if err := json.Unmarshal([]byte(line), &ready); err != nil {
		t.Fatalf("ready line %q: %v", line, err)
	}
	token, err := os.ReadFile(filepath.Join(home, server.BoardTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	b := client.New("http://"+ready.Addr, strings.TrimSpace(string(token)), nil)
	co, err := b.CreateCompany(ctx, "Orphans", "ORP")
	if err != nil {
		t.Fatal(err)
	}
	if err := co.Start(ctx); err != nil {
		t.Fatal(err)
	}
	runID := hangAgent(ctx, t, co, 4*time.Minute)
	var pid int
	waitFor(t, "the hang process to run", func() (bool, error) {
		pid = childPID(cmd.Process.Pid)
		return pid != 0, nil
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitFor(t, "the orphaned process to die with the server", func() (bool, error) {
		return syscall.Kill(pid, 0) != nil, nil
	})
	in := &instance{t: t, home: home}
	in.start()
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), settle)
		defer cancel()
		in.sv.Shutdown(sctx)
	})
	rec := waitRecord(t, in, runID, "the orphaned record", func(r api.HeartbeatRun) bool { return r.State == api.RunOrphaned })
	if rec.Status != controlplane.RunInterrupted || !strings.Contains(rec.Reason, "orphaned") {
		t.Fatalf("record %+v, want an orphaned interrupted run", rec)
	}
	st := snapshot(t, in.handle(co))
	if run := findRun(t, st, runID); run.Status != controlplane.RunInterrupted {
		t.Fatalf("run is %s, want interrupted", run.Status)
	}
	if len(st.Runs) != 1 {
		t.Fatalf("%d runs, want 1: the orphan must not be relaunched", len(st.Runs))
	}
	if recs, err := in.handle(co).HeartbeatRuns(ctx); err != nil || len(recs) != 1 {
		t.Fatalf("records %+v (%v), want the orphan's only", recs, err)
	}
	bc := client.New(in.sv.URL, in.sv.BoardToken(), nil)
	retry, err := bc.RetryHeartbeatRun(ctx, runID, client.IdempotencyKey("retry-1"))
	if err != nil {
		t.Fatal(err)
	}
	if again, err := bc.RetryHeartbeatRun(ctx, runID, client.IdempotencyKey("retry-1")); err != nil || again != retry {
		t.Fatalf("replayed Retry: %+v %v, want %+v", again, err, retry)
	}
	if _, err := bc.RetryHeartbeatRun(ctx, runID); controlplane.CodeOf(err) != controlplane.CodeRunAlreadyRetried {
		t.Fatalf("second Retry: %v, want run_already_retried", err)
	}
	waitRecord(t, in, retry.RetryRunID, "the retry's process", func(r api.HeartbeatRun) bool { return r.ProcessStartedAt != "" })
	st = snapshot(t, in.handle(co))
	if run := findRun(t, st, retry.RetryRunID); run.RetryOf == nil || *run.RetryOf != runID || run.TaskID != findRun(t, st, runID).TaskID {
		t.Fatalf("retry run %+v, want bound to %s", run, runID)
	}
	if len(st.Runs) != 2 {
		t.Fatalf("%d runs, want the orphan and one retry", len(st.Runs))
	}
	if _, err := bc.CancelRun(ctx, retry.RetryRunID, ""); err != nil {
		t.Fatal(err)
	}
}

// childPID returns the pid of a child of parent (0 when none), from /proc/*/stat.
func childPID(parent int) int {
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may contain spaces, so split after the last ')'.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(parent) {
			pid, _ := strconv.Atoi(strings.Fields(s)[0])
			return pid
		}
	}
	return 0
}

// TestConcurrencyBound: with MaxConcurrent 1, two companies' hang runs never overlap:
// the second process starts only after the first ended.
func TestConcurrencyBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in := startInstanceWith(t, server.RunnerOptions{MaxConcurrent: 1})
	var ids []string
	for range 2 {
		ids = append(ids, hangAgent(ctx, t, in.company(ctx), 1500*time.Millisecond))
	}
	var spans [][2]time.Time
	for _, id := range ids {
		rec := waitRecord(t, in, id, "the hang run to finish", finished)
		start, err1 := time.Parse(time.RFC3339Nano, rec.ProcessStartedAt)
		end, err2 := time.Parse(time.RFC3339Nano, rec.ProcessEndedAt)
		if err1 != nil || err2 != nil {
			t.Fatalf("record %+v has no process times", rec)
		}
		spans = append(spans, [2]time.Time{start, end})
	}
	if spans[0][0].Before(spans[1][1]) && spans[1][0].Before(spans[0][1]) {
		t.Fatalf("the processes overlapped: %v", spans)
	}
}

// TestStopRunWithoutProcess: a run the board opened itself (no agent process of this
// server) is completed as cancelled under the reserved intent at once.
func TestStopRunWithoutProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in := startInstance(t)
	co := in.company(ctx)
	res, err := co.CreateAgent(ctx, api.CreateAgentRequest{Name: "Driverless", Role: "qa"})
	if err != nil {
		t.Fatal(err)
	}
	task, _ := createIssue(ctx, t, co, "Opened by the board", "", "", res.ID)
	st := snapshot(t, co)
	if _, err := co.OpenFixtureRun(ctx, controlplane.OpenInput{BackendKind: "board",
		Identity: controlplane.Identity{RunID: "board-run-1", SessionID: "s1", CompanyID: st.Company.ID, IssueID: task, AgentID: res.ID}}); err != nil {
		t.Fatal(err)
	}
	id := uuid.NewString()
	b := in.board()
	// the Stop's answers are the ones /openapi.json documents: 202 reserved, 200 joined
	status, body := documentedCall(t, in, "POST", "/api/heartbeat-runs/{run}/cancel", map[string]string{"run": "board-run-1"},
		`{"cancellationRequestId":"`+id+`"}`)
	var out api.CancelRunResponse
	if err := json.Unmarshal(body, &out); err != nil || status != 202 || out.Disposition != "reserved" || out.Status != "cancelled" {
		t.Fatalf("Stop: %d %s, %v; want 202 reserved and cancelled", status, body, err)
	}
	if run := findRun(t, snapshot(t, co), "board-run-1"); run.Status != "cancelled" {
		t.Fatalf("run is %s, want cancelled", run.Status)
	}
	if out, err := b.CancelRun(ctx, "board-run-1", id); err != nil || out.Disposition != "joined" {
		t.Fatalf("repeated Stop: %+v, %v; want joined", out, err)
	}
	status, body = documentedCall(t, in, "POST", "/api/heartbeat-runs/{run}/cancel", map[string]string{"run": "board-run-1"},
		`{"cancellationRequestId":"`+id+`"}`)
	if err := json.Unmarshal(body, &out); err != nil || status != 200 || out.Disposition != "joined" {
		t.Fatalf("repeated Stop over HTTP: %d %s, %v; want 200 joined", status, body, err)
	}
	if _, err := b.CancelRun(ctx, "board-run-1", uuid.NewString()); stopCode(err) != controlplane.CodeCancellationConflict {
		t.Fatalf("another UUID: %v, want a conflict", err)
	}
	if runs := snapshot(t, co).Runs; len(runs) != 1 {
		t.Fatalf("%d runs, want only the board's: the runner never runs an agent without a driver", len(runs))
	}
}

// TestSteerRefused: the Steer button needs a running Pi turn: a running exec agent's
// run is run_not_steerable (409) and gets no comment, an empty message is
// invalid_request, an unknown run run_missing, an agent token forbidden. (A Pi run
// steered end to end is the default catalog's pi-native.pi-steering cell.)
func TestSteerRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in := startInstance(t)
	co := in.company(ctx)
	runID := hangAgent(ctx, t, co, 4*time.Minute)
	waitRecord(t, in, runID, "the hang process to start", func(r api.HeartbeatRun) bool { return r.ProcessStartedAt != "" })
	b := in.board()
	before := len(snapshot(t, co).Comments)
	for _, s := range []struct {
		name, run, body string
		code            controlplane.Code
	}{
		{"exec run", runID, "steer me", controlplane.CodeRunNotSteerable},
		{"empty message", runID, "  ", controlplane.CodeInvalidRequest},
		{"unknown run", "hb-no-such-run", "steer me", controlplane.CodeRunMissing},
	} {
		if _, err := b.SteerRun(ctx, s.run, s.body); stopCode(err) != s.code {
			t.Errorf("%s: %v, want %s", s.name, err, s.code)
		}
	}
	if after := len(snapshot(t, co).Comments); after != before {
		t.Errorf("a refused Steer posted %d comment(s)", after-before)
	}
	agentTok := in.sv.MintAgentToken(co.ID(), "x", runID)
	if _, err := client.New(in.sv.URL, agentTok, nil).SteerRun(ctx, runID, "steer me"); stopCode(err) != "forbidden" {
		t.Errorf("Steer with an agent token: %v, want forbidden", err)
	}
	if _, err := b.CancelRun(ctx, runID, ""); err != nil {
		t.Fatal(err)
	}
	waitRecord(t, in, runID, "the stopped run to finish", finished)
}
