package environment

import (
	"fmt"
	"strings"
	"time"
)

// CleanupReport is what Cleanup did to a lease.
//
//   - Confirmed: destruction was verified: Remaining is empty and nothing in Errors
//     stands in the way. A provider that cannot verify something lists it in
//     Unverified instead (local: it has no cgroup to find escaped processes in).
//   - Found: what the lease held when cleanup began (processes still in it, its mounts,
//     the files on its disk); Remaining: what is still there afterwards.
//   - EndedAt: when cleanup finished (the lease's end for billing).
type CleanupReport struct {
	LeaseID    string    `json:"leaseId"`
	Confirmed  bool      `json:"confirmed"`
	Found      Inventory `json:"found"`
	Remaining  Inventory `json:"remaining"`
	Unverified []string  `json:"unverified,omitempty"`
	Errors     []string  `json:"errors,omitempty"`
	EndedAt    time.Time `json:"endedAt"`
}

// Inventory lists a lease's host resources. Files holds at most MaxInventoryFiles
// paths; FileCount and FileBytes count them all.
type Inventory struct {
	Processes []Process `json:"processes,omitempty"`
	Mounts    []string  `json:"mounts,omitempty"`
	Cgroups   []string  `json:"cgroups,omitempty"`
	// Containers names the engine's containers of the lease (container provider).
	Containers []string `json:"containers,omitempty"`
	Files      []string `json:"files,omitempty"`
	FileCount  int      `json:"fileCount,omitempty"`
	FileBytes  int64    `json:"fileBytes,omitempty"`
}

// MaxInventoryFiles bounds Inventory.Files.
const MaxInventoryFiles = 32

// Process is one process found in a lease: its host pid and its command name.
type Process struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
}

// Empty reports whether the inventory lists nothing.
func (i Inventory) Empty() bool {
	return len(i.Processes) == 0 && len(i.Mounts) == 0 && len(i.Cgroups) == 0 && len(i.Containers) == 0 && len(i.Files) == 0 && i.FileCount == 0
}

// String says what the inventory holds, for a cleanup_failure reason.
func (i Inventory) String() string {
	var parts []string
	if n := len(i.Processes); n > 0 {
		var ps []string
		for _, p := range i.Processes[:min(n, 8)] {
			ps = append(ps, fmt.Sprintf("%d (%s)", p.PID, p.Comm))
		}
		parts = append(parts, fmt.Sprintf("%d process(es): %s", n, strings.Join(ps, ", ")))
	}
	if len(i.Mounts) > 0 {
		parts = append(parts, "mounts: "+strings.Join(i.Mounts, ", "))
	}
	if len(i.Cgroups) > 0 {
		parts = append(parts, "cgroups: "+strings.Join(i.Cgroups, ", "))
	}
	if len(i.Containers) > 0 {
		parts = append(parts, "containers: "+strings.Join(i.Containers, ", "))
	}
	if i.FileCount > 0 || len(i.Files) > 0 {
		parts = append(parts, fmt.Sprintf("%d file(s), %d bytes: %s", i.FileCount, i.FileBytes, strings.Join(i.Files, ", ")))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, "; ")
}

// Reason is the sentence a cleanup_failure verdict carries: "" when confirmed.
func (r CleanupReport) Reason() string {
	if r.Confirmed {
		return ""
	}
	s := "cleanup of " + r.LeaseID + " not confirmed: remaining " + r.Remaining.String()
	if len(r.Errors) > 0 {
		s += "; errors: " + strings.Join(r.Errors, "; ")
	}
	return s
}
