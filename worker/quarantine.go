package worker

import "github.com/agentproof/agentproof/evidence"

// quarantine keeps dir exactly as it is — contents preserved, nothing removed, moved or
// written — and records where it is and why. No later run reuses it: every run creates
// a fresh directory, so a quarantined directory is never taken over.
func quarantine(dir, reason string) WorkspaceDisposition {
	return WorkspaceDisposition{State: evidence.WorkspaceQuarantined, Path: dir, Reason: clipText(reason, 256)}
}
