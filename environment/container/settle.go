package container

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/hostlease"
	"github.com/agentproof/agentproof/environment/sandbox"
	"github.com/agentproof/agentproof/worker"
)

// Fact names of a container launch's Settled.Facts besides the sandbox's.
const (
	// FactImage is the image the launch ran, by digest.
	FactImage = "image"
	// FactImageID is the engine's id of that image.
	FactImageID = "imageId"
	// FactEngine is the engine, its version and runtime ("podman 4.3.1 runc").
	FactEngine = "engine"
	// FactContainer is the container's name.
	FactContainer = "container"
	// FactCounters says that init could not read the container's cgroup counters.
	FactCounters = "counters"
	// FactRemoved is "confirmed" when the engine no longer knows the container after
	// Settle removed it, else what stands in the way (the lease's Cleanup tries again
	// and fails the cell when it cannot confirm it either).
	FactRemoved = "removed"
)

// Settle reads init's exit report and puts the agent's own exit into the outcome,
// names the memory and pids limits its cgroup counters show the launch hit, removes the container and
// confirms it is gone, checks the lease disk, and removes the launch's generated files
// (and, when the lease is not reused, its scratch).
func (x *launched) Settle(o worker.Outcome) environment.Settled {
	eng := x.st.engine()
	engine := string(x.st.Engine) + " " + x.st.EngineVersion
	if x.st.Runtime != "" {
		engine += " " + x.st.Runtime
	}
	s := environment.Settled{Outcome: o, Facts: map[string]string{
		"provider": string(environment.ProviderContainer), "lease": x.lease.ID, "launch": strconv.Itoa(x.n),
		"uid": strconv.Itoa(x.st.UID), FactImage: x.lease.Image, FactImageID: x.st.ImageID, FactEngine: engine, FactContainer: x.name,
	}}
	rep, err := x.settleInit(&s)
	ctx := context.Background()
	if err == nil {
		s.Limits = append(s.Limits, limitHits(x.lease.Shape, rep.Counters)...)
		if len(rep.Counters) < 2 {
			s.Facts[FactCounters] = "unreadable inside the container: an OOM kill or a refused fork may go unnamed"
		}
	}
	s.Facts[FactRemoved] = x.removeConfirmed(ctx, eng)
	if w := sandbox.WritesOutside(x.scratch, x.mountPoints); w != "" {
		s.Facts[sandbox.FactWritesOutside] = w
	}
	if full, err := hostlease.DiskFull(x.st.Disk); err == nil && full {
		shape := x.lease.Shape
		s.Limits = append(s.Limits, environment.LimitHit{Resource: environment.ResourceDisk, Limit: shape.DiskBytes, Events: 1,
			Detail: fmt.Sprintf("disk limit %d bytes: the lease disk is full", shape.DiskBytes)})
	}
	_ = os.RemoveAll(x.dir)
	if !x.lease.Reuse {
		_ = os.RemoveAll(x.scratch)
	}
	return s
}

// settleInit reads init's exit report into s (sandbox.SettleInit): from podman's
// status pipe, or from docker's status socket, which it then removes.
func (x *launched) settleInit(s *environment.Settled) (sandbox.InitStatus, error) {
	if x.status == nil {
		return sandbox.SettleInit(s, x.statusR, x.statusW, "container init", "the engine's")
	}
	defer x.status.close()
	rep, err := x.status.read()
	sandbox.ApplyInitStatus(s, rep, err, "container init", "the engine's")
	return rep, err
}

// limitHits are the memory and pids limits the container's own cgroup counters, read
// by init at the agent's end (the engine removes the cgroup at the container's exit),
// show the launch hit.
func limitHits(shape environment.Shape, counters map[string]int64) []environment.LimitHit {
	var out []environment.LimitHit
	if n := counters[sandbox.CounterOOMKills]; n > 0 {
		out = append(out, environment.LimitHit{Resource: environment.ResourceMemory, Limit: shape.MemoryBytes, Events: n,
			Detail: fmt.Sprintf("memory limit %d bytes: %d OOM kill(s)", shape.MemoryBytes, n)})
	}
	if n := counters[sandbox.CounterForkRefusals]; n > 0 {
		out = append(out, environment.LimitHit{Resource: environment.ResourcePIDs, Limit: shape.PIDs, Events: n,
			Detail: fmt.Sprintf("pids limit %d: %d fork(s) refused", shape.PIDs, n)})
	}
	return out
}

// removeConfirmed confirms that the launch's container is gone: the engine removed it
// at its exit (run --rm); one that is still there (its engine process was killed
// first) is removed here and asked about again. It returns "confirmed", or what went
// wrong.
func (x *launched) removeConfirmed(ctx context.Context, eng Engine) string {
	there, err := eng.exists(ctx, x.name)
	if err == nil && !there {
		return "confirmed"
	}
	if err := eng.remove(ctx, x.name); err != nil {
		return "removal failed: " + err.Error()
	}
	there, err = eng.exists(ctx, x.name)
	switch {
	case err != nil:
		return "unconfirmed: " + err.Error()
	case there:
		return "the engine still lists the container"
	}
	return "confirmed"
}
