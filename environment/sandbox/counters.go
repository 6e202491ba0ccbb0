package sandbox

// Counter names of InitStatus.Counters.
const (
	// CounterOOMKills counts the processes the kernel killed at the memory limit.
	CounterOOMKills = "oomKills"
	// CounterForkRefusals counts the forks the pids limit refused.
	CounterForkRefusals = "forkRefusals"
)

// ownCgroupCounters reads, from init's own view of /sys/fs/cgroup (a container's: its
// own cgroups, mounted read-only), the memory cgroup's OOM kills and the pids cgroup's
// refused forks: cgroup v2's memory.events and pids.events at the root, or v1's
// memory/memory.oom_control and pids/pids.events. A counter it cannot read is absent.
func ownCgroupCounters() map[string]int64 {
	out := map[string]int64{}
	for _, c := range []struct{ name, file, key string }{
		{CounterOOMKills, "/sys/fs/cgroup/memory.events", "oom_kill"},
		{CounterOOMKills, "/sys/fs/cgroup/memory/memory.oom_control", "oom_kill"},
		{CounterForkRefusals, "/sys/fs/cgroup/pids.events", "max"},
		{CounterForkRefusals, "/sys/fs/cgroup/pids/pids.events", "max"},
	} {
		if _, done := out[c.name]; done {
			continue
		}
		if n, ok := counter(c.file, c.key); ok {
			out[c.name] = n
		}
	}
	return out
}
