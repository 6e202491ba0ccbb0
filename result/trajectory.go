package result

import "fmt"

// TrajectoryRef points result.json at the ATIF trajectory of one run (package
// trajectory; docs/trajectories.md): Path is the file relative to the attempt
// directory; Format the raw stream it was built from (for example "codex-exec-json",
// "agentproof-board-record", "agentproof-model-requests"); RunID the control plane's
// run ("" for a stream keyed by run order) and RunOrdinal that order (1-based; 0 when
// RunID is set); Steps and ToolCalls count the steps and tool calls read from the
// stream (a document of a stream with no step holds one system step saying so, which
// Steps does not count); Partial says the stream was incomplete and Gaps why (an honest partial trajectory, never invented steps).
type TrajectoryRef struct {
	Path       string   `json:"path"`
	Format     string   `json:"format"`
	RunID      string   `json:"runId,omitempty"`
	RunOrdinal int      `json:"runOrdinal,omitempty"`
	Steps      int      `json:"steps"`
	ToolCalls  int      `json:"toolCalls"`
	Partial    bool     `json:"partial"`
	Gaps       []string `json:"gaps,omitempty"`
}

// checkTrajectories validates result.json's trajectories: safe relative paths, a
// format, non-negative counts, a run id or ordinal.
func checkTrajectories(refs []TrajectoryRef) []string {
	var p []string
	for i, r := range refs {
		if !SafeRelPath(r.Path) {
			p = append(p, fmt.Sprintf("trajectories[%d].path: %q is not a safe relative path", i, r.Path))
		}
		if r.Format == "" {
			p = append(p, fmt.Sprintf("trajectories[%d].format: must not be empty", i))
		}
		if r.Steps < 0 || r.ToolCalls < 0 || r.RunOrdinal < 0 {
			p = append(p, fmt.Sprintf("trajectories[%d]: counts must not be negative", i))
		}
		if r.RunID == "" && r.RunOrdinal == 0 {
			p = append(p, fmt.Sprintf("trajectories[%d]: needs a runId or a runOrdinal", i))
		}
		if r.Partial != (len(r.Gaps) > 0) {
			p = append(p, fmt.Sprintf("trajectories[%d]: partial must be true exactly when gaps are listed", i))
		}
	}
	return p
}

// prefixTrajectories rewrites trajectory paths relative to the campaign directory, as
// prefixEvidence does evidence paths.
func prefixTrajectories(dir string, refs []TrajectoryRef) []TrajectoryRef {
	if refs == nil {
		return nil
	}
	out := make([]TrajectoryRef, len(refs))
	for i, r := range refs {
		r.Path = dir + "/" + r.Path
		out[i] = r
	}
	return out
}
