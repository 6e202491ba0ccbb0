package attempt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/redact"
)

// Teardown is what the teardown stage returns: the cleanup problems (a fixture that
// did not tear down, a server that had to be killed or left processes behind, a temp
// root that could not be removed), the leaks found (in the closed instance home, the
// workspace, the evidence written), the required evidence missing (only for attempts
// that reached grading), and whether cleanup was confirmed (teardown ran and found no
// problem). Cleanup findings of later checks (processes that escaped their group, a
// scan of the whole temp root) belong in Problems and Leaks.
type Teardown struct {
	Problems  []string
	Leaks     []string
	Missing   []string
	Confirmed bool
}

// teardown tears down what the stages left, in reverse: the fixtures (fixtures.json),
// the server (its logs), the scripted model (its request log), then writes the flow
// log and the agent logs, scans the closed home and the workspace for leaks, removes
// the temp root, checks the required evidence and scans the evidence written. It runs
// with a context that outlives a cancellation, bounded by teardownTimeout.
func (x *LocalExecutor) teardown(ctx context.Context, a *attempt, s *Stages) Teardown {
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
	defer cancel()
	var t Teardown
	secrets, p := s.secrets(), &s.Provisioned
	if fx := s.Fixtures.Set; fx != nil {
		if err := fx.Teardown(tctx); err != nil {
			t.Problems = append(t.Problems, secrets.RedactText(err.Error()))
		}
		writeJSON(a.ev, secrets, "fixtures.json", fx.States())
	}
	if s.Fixtures.CleanupErr != "" {
		t.Problems = append(t.Problems, s.Fixtures.CleanupErr)
	}
	t.Problems = append(t.Problems, stopServices(a, p, secrets)...)
	a.ev.Write(secrets, "logs/flow.log", []byte(a.log.text()), true)
	if p.Root != "" {
		collectAgentLogs(a.ev, secrets, p.Home)
		t.Leaks = append(t.Leaks, scanClosed(secrets, p.Home, p.Workspace, &t.Problems)...)
		t.Problems = append(t.Problems, x.removeRoot(p.Root)...)
		_ = p.rootClaim.Release() // removed or kept: nobody's to sweep
	}
	if s.Grades.Matchers != nil {
		t.Missing = a.ev.CheckRequired()
	}
	t.Leaks = append(t.Leaks, a.ev.Leaks()...)
	t.Leaks = append(t.Leaks, scanEvidence(secrets, a.ev.Dir())...)
	t.Confirmed = len(t.Problems) == 0
	return t
}

// stopServices stops the server and the scripted model and keeps their logs; it
// returns the cleanup problems.
func stopServices(a *attempt, p *Provisioned, secrets *redact.Set) []string {
	var problems []string
	if p.Instance != nil {
		current, earlier, err := p.Instance.stop()
		if err != nil {
			problems = append(problems, err.Error())
		}
		for _, log := range earlier {
			a.ev.Write(secrets, "logs/serve-before-restart.stderr.log", log, true)
		}
		a.ev.Write(secrets, "logs/serve.stderr.log", current, true)
	}
	if p.Model != nil {
		if err := p.Model.stop(a.ev, secrets); err != nil {
			problems = append(problems, err.Error())
		}
	}
	return problems
}

// scanClosed scans the closed instance home and the workspace for every secret value
// (exact values only: spec §10.2); the home's own key files are exempt. A scan that
// could not complete is a cleanup problem (appended to problems).
func scanClosed(secrets *redact.Set, home, workspace string, problems *[]string) []string {
	var leaks []string
	for _, d := range []struct{ name, path string }{{"instance home", home}, {"workspace", workspace}} {
		found, err := secrets.ScanTree(d.path, false)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			*problems = append(*problems, fmt.Sprintf("leak scan of the %s could not complete: %v", d.name, secrets.RedactText(err.Error())))
		}
		for _, l := range found {
			if d.path == home && ownSecretFile(home, l.Path) {
				continue // the board token's or master key's own file
			}
			leaks = append(leaks, fmt.Sprintf("secret leak in persisted %s state at %s: %s", d.name, l.Path, l.Leak.String()))
		}
	}
	return leaks
}

// removeRoot removes the attempt's temp root (unless KeepRoot) and confirms it is gone.
func (x *LocalExecutor) removeRoot(root string) []string {
	if x.KeepRoot {
		return []string{"temp root kept for debugging: " + root}
	}
	if err := os.RemoveAll(root); err != nil {
		return []string{fmt.Sprintf("temp root could not be removed: %v", err)}
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		return []string{"temp root still exists after removal"}
	}
	return nil
}

// scanEvidence scans what the attempt wrote under its results directory.
func scanEvidence(secrets *redact.Set, dir string) []string {
	found, err := secrets.ScanTree(dir, false)
	if err != nil {
		return []string{"evidence could not be scanned: " + secrets.RedactText(err.Error())}
	}
	var leaks []string
	for _, l := range found {
		leaks = append(leaks, fmt.Sprintf("evidence %s: %s", l.Path, l.Leak.String()))
	}
	return leaks
}

// maxAgentLog bounds each agent log copied into the attempt directory, in bytes.
const maxAgentLog = 256 << 10

// collectAgentLogs copies the heartbeat runner's bounded, redacted run evidence
// (stdout, stderr and event streams per run) from the closed instance home into
// logs/agent/ through the guard, as agent content, each cut to maxAgentLog bytes.
func collectAgentLogs(ev *campaign.Evidence, secrets *redact.Set, home string) {
	base := filepath.Join(home, "heartbeat")
	_ = filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(base, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if !strings.HasSuffix(rel, ".log") && !strings.HasSuffix(rel, ".jsonl") && !strings.Contains(rel, "stdout") && !strings.Contains(rel, "stderr") {
			return nil
		}
		if b, err := readBounded(p, maxAgentLog); err == nil {
			ev.Write(secrets, "logs/agent/"+rel, b, false)
		}
		return nil
	})
}
