package match

import "fmt"

// KindProcessIdentity grades which agent process carried out each run of the attempt
// (Observation.Processes: pid and start time, observed by the heartbeat runner from
// /proc, never taken from the catalog). With samePidAcrossTurns true (the warm
// lifecycle's oracle) it passes when there are at least two runs and every one ran in
// the same process — the same pid and the same start time, so that a reused pid is a
// different process; with false (per_turn) it passes when every run ran in a process of
// its own. It fails otherwise, and is not reached when the identities were not
// collected, a run's identity was not recorded, or (true) fewer than two runs ran.
const KindProcessIdentity Kind = "process_identity"

// ProcessIdentity is one run's agent process: PID and StartTicks, its start time in
// clock ticks after boot (/proc/<pid>/stat field 22). The zero value is unobserved.
type ProcessIdentity struct {
	RunID      string `json:"runId,omitempty"`
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"startTicks"`
}

// compileProcess checks samePidAcrossTurns (required).
func compileProcess(spec Spec, c *compiled, bad badFunc) {
	if spec.SamePIDAcrossTurns == nil {
		bad("samePidAcrossTurns", "samePidAcrossTurns is required: true (every run in one process: warm) or false (every run in its own: per_turn)")
		return
	}
	c.samePID = *spec.SamePIDAcrossTurns
	c.display = map[string]any{"samePidAcrossTurns": c.samePID}
}

// evalProcess compares the runs' process identities.
func (c *compiled) evalProcess(obs *Observation) result {
	if !obs.HasProcesses || len(obs.Processes) == 0 {
		return result{missing: "no run recorded its agent process"}
	}
	for i, p := range obs.Processes {
		if p.PID <= 0 || p.StartTicks == 0 {
			return result{missing: fmt.Sprintf("run %d did not record its agent process's pid and start time", i+1)}
		}
	}
	observed := append([]ProcessIdentity(nil), obs.Processes...)
	if c.samePID {
		if len(obs.Processes) < 2 {
			return result{missing: fmt.Sprintf("only %d run was observed; one process across turns needs at least two", len(obs.Processes))}
		}
		first := obs.Processes[0]
		for _, p := range obs.Processes[1:] {
			if p.PID != first.PID || p.StartTicks != first.StartTicks {
				return result{observed: observed}
			}
		}
		return result{passed: true, observed: observed}
	}
	seen := map[ProcessIdentity]bool{}
	for _, p := range obs.Processes {
		k := ProcessIdentity{PID: p.PID, StartTicks: p.StartTicks}
		if seen[k] {
			return result{observed: observed}
		}
		seen[k] = true
	}
	return result{passed: true, observed: observed}
}
