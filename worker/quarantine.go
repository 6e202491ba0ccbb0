package worker

// quarantine keeps dir exactly as it is — contents preserved, nothing removed, moved or
// written — and records where it is and why (seed 003, invariant 7). No later run reuses
// it: every run creates a fresh directory, so a quarantined directory is never taken over.
func quarantine(dir, reason string) WorkspaceDisposition {
	return WorkspaceDisposition{State: "quarantined", Path: dir, Reason: clipText(reason, 256)}
}
