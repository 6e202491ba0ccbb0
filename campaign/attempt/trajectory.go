package attempt

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/campaign"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/result"
	"github.com/agentproof/agentproof/trajectory"
)

// agentRunsDir is where collectAgentLogs puts each run's kept evidence
// (logs/agent/runs/<runId>/…), and where each run's ATIF trajectory goes, next to the
// raw stream it was built from.
const agentRunsDir = "logs/agent/runs/"

// modelTrajectoriesDir holds the trajectories of the scripted model's request log, one
// directory per run ordinal (logs/model-requests/run-<n>/trajectory.json).
const modelTrajectoriesDir = "logs/model-requests/"

// exportTrajectories writes the ATIF trajectory (package trajectory) of every run the
// heartbeat runner recorded, and of every run of the scripted model's request log,
// into the attempt's evidence through the guard (ours: agentproof renders them, from
// agent content that was redacted and guarded on its way into the evidence, which is
// what they are built from: a trajectory never holds more than the raw evidence
// does). It returns the references result.json lists. A run whose stream is missing
// or incomplete gets a partial trajectory that says why; a trajectory the guard
// refuses is not referenced (evidence-manifest.json records the refusal).
func exportTrajectories(ev *campaign.Evidence, secrets *redact.Set, runs []api.HeartbeatRun) []result.TrajectoryRef {
	dir := ev.Dir()
	files := ev.Files()
	var state *controlplane.State
	if b, err := os.ReadFile(filepath.Join(dir, "snapshots", "api-state.json")); err == nil {
		var st controlplane.State
		if json.Unmarshal(b, &st) == nil {
			state = &st
		}
	}
	var refs []result.TrajectoryRef
	for _, r := range runs {
		if r.RunID == "" || !result.SafeRelPath(r.RunID) || strings.Contains(r.RunID, "/") {
			continue
		}
		runDir := agentRunsDir + r.RunID + "/"
		var names []string
		for _, f := range files {
			if rest, ok := strings.CutPrefix(f, runDir); ok && !strings.Contains(rest, "/") {
				names = append(names, rest)
			}
		}
		format, ok := trajectory.Select(r.Driver, names)
		if !ok {
			continue
		}
		in := trajectory.Input{RunID: r.RunID, Driver: r.Driver, Agent: agentOf(r), State: state}
		if format.File != "" {
			in.Stream, in.Cut = readEvidence(dir, runDir+format.File)
		}
		in.Stdout, _ = readEvidence(dir, runDir+"stdout.log")
		if t := r.Termination; t != nil && t.OutputExceeded {
			in.Cut = true
		}
		t := format.Convert(in)
		if ref, ok := writeTrajectory(ev, secrets, runDir+trajectory.ATIFFile, t); ok {
			refs = append(refs, ref)
		}
	}
	if log, cut := readEvidence(dir, ModelLogFile); len(log) > 0 {
		for _, t := range trajectory.ModelLog(log, cut) {
			rel := fmt.Sprintf("%srun-%d/%s", modelTrajectoriesDir, t.Ordinal, trajectory.ATIFFile)
			if ref, ok := writeTrajectory(ev, secrets, rel, t); ok {
				refs = append(refs, ref)
			}
		}
	}
	return refs
}

// agentOf names a run's agent for its trajectory: the CLI and its version as the
// heartbeat runner recorded launching it, else agentproof's driver.
func agentOf(r api.HeartbeatRun) trajectory.Agent {
	if l := r.Launch; l != nil && l.CLIName != "" {
		return trajectory.Agent{Name: l.CLIName, Version: l.CLIVersion}
	}
	return trajectory.Agent{Name: "agentproof " + r.Driver.String(), Version: agentproofVersion()}
}

// agentproofVersion is this binary's module version from its build info ("unknown"
// without one).
func agentproofVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}

// readEvidence reads an evidence file of the attempt, bounded by maxAgentLog for a
// run's stream and maxModelLog for the model log; cut says the file reached its bound
// when it was copied (its tail is missing).
func readEvidence(dir, rel string) (b []byte, cut bool) {
	limit := int64(maxAgentLog)
	if rel == ModelLogFile {
		limit = maxModelLog
	}
	b, err := readBounded(filepath.Join(dir, filepath.FromSlash(rel)), limit+1)
	if err != nil {
		return nil, false
	}
	return b, int64(len(b)) >= limit
}

// writeTrajectory renders t as ATIF into rel through the guard and returns its
// reference.
func writeTrajectory(ev *campaign.Evidence, secrets *redact.Set, rel string, t trajectory.Trajectory) (result.TrajectoryRef, bool) {
	b, err := trajectory.ATIF(t)
	if err != nil || !ev.Write(secrets, rel, b, true) {
		return result.TrajectoryRef{}, false
	}
	ref := result.TrajectoryRef{Path: path.Clean(rel), Format: t.Format, RunID: t.RunID, Steps: len(t.Steps), Partial: t.Partial(), Gaps: t.Gaps}
	if t.RunID == "" {
		ref.RunOrdinal = t.Ordinal
	}
	for _, s := range t.Steps {
		ref.ToolCalls += len(s.ToolCalls)
	}
	return ref, true
}
