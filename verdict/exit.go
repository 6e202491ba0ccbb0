package verdict

// ExitCode is the exit status of an agentproof command (README "Exit codes").
type ExitCode int

// The exit codes of every agentproof command.
const (
	// ExitPassed: everything passed (a calibration cell: met its expectation).
	ExitPassed ExitCode = 0
	// ExitFailed: at least one cell failed (the candidate is at fault or a safety rule
	// broke). Never used for agentproof's own errors.
	ExitFailed ExitCode = 1
	// ExitUsage: a usage or configuration error (a flag, a file, a field), reported
	// before anything started.
	ExitUsage ExitCode = 2
	// ExitInconclusive: nothing failed, but some evidence was incomplete or the
	// harness was at fault.
	ExitInconclusive ExitCode = 3
	// ExitPartial: every cell that ran passed, but some selected cells were not run
	// because this machine cannot provide their environment (a sandbox without root,
	// bubblewrap missing): not a failure, and never a pass of the cells not run.
	ExitPartial ExitCode = 4
	// ExitInternal: an internal error — a bug in agentproof, or agentproof could not
	// do its own work (write a result, render the report). Never confused with failed.
	// 70 is EX_SOFTWARE of sysexits(3).
	ExitInternal ExitCode = 70
	// ExitInterrupted: the user interrupted the command (SIGINT or SIGTERM).
	ExitInterrupted ExitCode = 130
)

// severity orders exit codes for Worst: an internal error beats an interruption beats
// a usage error beats failed beats inconclusive beats partial beats passed.
func (c ExitCode) severity() int {
	switch c {
	case ExitPassed:
		return 0
	case ExitPartial:
		return 1
	case ExitInconclusive:
		return 2
	case ExitFailed:
		return 3
	case ExitUsage:
		return 4
	case ExitInterrupted:
		return 5
	}
	return 6 // ExitInternal and any unknown code
}

// Worst is the one worst-of rule: the most severe of codes (ExitInternal beats
// ExitInterrupted beats ExitUsage beats ExitFailed beats ExitInconclusive beats
// ExitPartial beats ExitPassed; docs/ARCHITECTURE.md "Verdicts": a campaign's code is
// the worst of its cells, 1 beats 3 beats 4 beats 0). No codes is ExitPassed.
func Worst(codes ...ExitCode) ExitCode {
	w := ExitPassed
	for _, c := range codes {
		if c.severity() > w.severity() {
			w = c
		}
	}
	return w
}

// WorstOf is the exit code of a set of counted verdicts: Worst of their ExitCodes.
func WorstOf(vs ...Verdict) ExitCode {
	w := ExitPassed
	for _, v := range vs {
		w = Worst(w, v.ExitCode())
	}
	return w
}
