package environment

import (
	"fmt"
	"math"
)

// GiB is 2³⁰ bytes.
const GiB = int64(1) << 30

// Shape is a pinned resource shape (CPU, memory and disk are always explicit, never a
// provider's default). CPUCores is a CPU quota in cores (1.5 = one and a half cores of CPU time
// per wall second); MemoryBytes caps resident memory (RAM-backed writable space
// included, see docs/environments.md); PIDs caps processes and threads together;
// DiskBytes caps the lease's writable space. The zero Shape pins nothing (local).
type Shape struct {
	CPUCores    float64 `json:"cpuCores"`
	MemoryBytes int64   `json:"memoryBytes"`
	PIDs        int64   `json:"pids"`
	DiskBytes   int64   `json:"diskBytes"`
}

// Limits of a Shape: below these a sandboxed agentproof init and a Go or Node agent
// cannot start at all, so a smaller shape is a catalog mistake, not a limit to test.
const (
	MinMemoryBytes = 32 << 20
	MinPIDs        = 16
	MinDiskBytes   = 1 << 20
	MinCPUCores    = 0.01
)

// Pinned reports whether every resource is set (what a sandbox lease needs and what a
// runtime estimate needs).
func (s Shape) Pinned() bool {
	return s.CPUCores > 0 && s.MemoryBytes > 0 && s.PIDs > 0 && s.DiskBytes > 0
}

// IsZero reports whether the shape pins nothing.
func (s Shape) IsZero() bool { return s == Shape{} }

// Declared lists the resources the shape sets a limit on (a value above zero), in
// the order cpu, memory, pids, disk; nil for the zero Shape.
func (s Shape) Declared() []Resource {
	var out []Resource
	for _, d := range []struct {
		r   Resource
		set bool
	}{{ResourceCPU, s.CPUCores > 0}, {ResourceMemory, s.MemoryBytes > 0}, {ResourcePIDs, s.PIDs > 0}, {ResourceDisk, s.DiskBytes > 0}} {
		if d.set {
			out = append(out, d.r)
		}
	}
	return out
}

// Problems lists what is wrong with a pinned shape (each value at or above its Min*
// limit, finite); it returns nil for a valid one.
func (s Shape) Problems() []string {
	var p []string
	if math.IsNaN(s.CPUCores) || math.IsInf(s.CPUCores, 0) || s.CPUCores < MinCPUCores {
		p = append(p, fmt.Sprintf("cpuCores %v must be a number ≥ %v", s.CPUCores, MinCPUCores))
	}
	if s.MemoryBytes < MinMemoryBytes {
		p = append(p, fmt.Sprintf("memoryBytes %d must be ≥ %d", s.MemoryBytes, MinMemoryBytes))
	}
	if s.PIDs < MinPIDs {
		p = append(p, fmt.Sprintf("pids %d must be ≥ %d", s.PIDs, MinPIDs))
	}
	if s.DiskBytes < MinDiskBytes {
		p = append(p, fmt.Sprintf("diskBytes %d must be ≥ %d", s.DiskBytes, MinDiskBytes))
	}
	return p
}
