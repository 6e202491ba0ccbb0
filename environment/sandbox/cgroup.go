package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/hostlease"
	"github.com/agentproof/agentproof/environment/sandbox/initproc"
)

// A lease's processes live in one cgroup per hierarchy that serves it (docs/
// environments.md "Resource shape"): the cgroup2 hierarchy for membership, kill
// (cgroup.kill) and the controllers it has, and a cgroup v1 hierarchy for each of
// memory, pids and cpu that cgroup2 does not offer here. Every cgroup is a child of
// the controller's own cgroup in that hierarchy (nested, so the controller's own
// limits still hold), named cgroupPrefix + lease id.

// cgroupPrefix starts the name of every lease cgroup.
const cgroupPrefix = "agentproof-"

// The controllers a lease pins.
const (
	ctrlMemory = "memory"
	ctrlPIDs   = "pids"
	ctrlCPU    = "cpu"
)

var leaseControllers = []string{ctrlMemory, ctrlPIDs, ctrlCPU}

// hierarchy is one mounted cgroup hierarchy as this process sees it.
type hierarchy struct {
	Version     int      // 1 or 2
	Mount       string   // mount point
	Controllers []string // v1: the mount's controllers; v2: those usable for children of Own
	Own         string   // this process's cgroup, relative to Mount ("/" for the root)
}

func (h hierarchy) ownDir() string { return filepath.Join(h.Mount, h.Own) }

// cgroupSystem is what discoverCgroups found: the v2 hierarchy (nil when not mounted)
// and the hierarchy serving each lease controller (absent when none does).
type cgroupSystem struct {
	V2    *hierarchy
	Serve map[string]*hierarchy
	Notes []string // why a controller is not served by v2, for the probe
}

// discoverCgroups reads /proc/self/mountinfo and /proc/self/cgroup. A controller is
// served by cgroup2 when our cgroup2 cgroup lists it in cgroup.controllers and has it
// (or can enable it) in cgroup.subtree_control; otherwise by its v1 hierarchy.
func discoverCgroups() (cgroupSystem, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return cgroupSystem{}, err
	}
	own, err := ownCgroups()
	if err != nil {
		return cgroupSystem{}, err
	}
	sys := cgroupSystem{Serve: map[string]*hierarchy{}}
	for _, m := range mounts {
		key := "v2"
		if m.version == 1 {
			key = strings.Join(m.controllers, ",")
		}
		path, ok := own[key]
		if !ok {
			continue
		}
		rel := "/" + strings.TrimPrefix(strings.TrimPrefix(path, m.root), "/")
		h := &hierarchy{Version: m.version, Mount: m.point, Controllers: m.controllers, Own: filepath.Clean(rel)}
		if m.version == 2 {
			if sys.V2 == nil {
				sys.V2 = h
			}
			continue
		}
		for _, c := range m.controllers {
			if slices.Contains(leaseControllers, c) && sys.Serve[c] == nil {
				sys.Serve[c] = h
			}
		}
	}
	if sys.V2 != nil {
		avail := strings.Fields(readTrim(filepath.Join(sys.V2.ownDir(), "cgroup.controllers")))
		enabled := strings.Fields(readTrim(filepath.Join(sys.V2.ownDir(), "cgroup.subtree_control")))
		for _, c := range leaseControllers {
			switch {
			case !slices.Contains(avail, c):
				sys.Notes = append(sys.Notes, fmt.Sprintf("cgroup2 at %s has no %s controller", sys.V2.Mount, c))
			case slices.Contains(enabled, c) || os.WriteFile(filepath.Join(sys.V2.ownDir(), "cgroup.subtree_control"), []byte("+"+c), 0) == nil:
				sys.V2.Controllers = append(sys.V2.Controllers, c)
				sys.Serve[c] = sys.V2
			default:
				sys.Notes = append(sys.Notes, fmt.Sprintf("cgroup2 %s cannot delegate %s to children (it holds processes)", sys.V2.ownDir(), c))
			}
		}
	}
	return sys, nil
}

type cgroupMount struct {
	version     int
	point, root string
	controllers []string
}

// cgroupMounts lists the cgroup and cgroup2 mounts of /proc/self/mountinfo.
func cgroupMounts() ([]cgroupMount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	defer f.Close()
	var out []cgroupMount
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20) // grows from 4 KiB as a line needs
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 {
			continue
		}
		m := cgroupMount{point: hostlease.UnescapeMount(a[4]), root: hostlease.UnescapeMount(a[3])}
		switch b[0] {
		case "cgroup2":
			m.version = 2
		case "cgroup":
			m.version = 1
			for _, o := range strings.Split(b[2], ",") {
				if o != "rw" && o != "ro" && !strings.Contains(o, "=") && o != "clone_children" && o != "noprefix" && o != "xattr" && o != "cpuset_v2_mode" {
					m.controllers = append(m.controllers, o)
				}
			}
			slices.Sort(m.controllers)
		default:
			continue
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// ownCgroups maps "v2" and each v1 hierarchy's sorted controller list ("cpu",
// "cpu,cpuacct") to this process's cgroup path in it (/proc/self/cgroup).
func ownCgroups() (map[string]string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("reading own cgroups: %w", err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			out["v2"] = parts[2]
			continue
		}
		var ctrls []string
		for _, c := range strings.Split(parts[1], ",") {
			if c != "" && !strings.Contains(c, "=") {
				ctrls = append(ctrls, c)
			}
		}
		if len(ctrls) > 0 {
			slices.Sort(ctrls)
			out[strings.Join(ctrls, ",")] = parts[2]
		}
	}
	return out, nil
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// cgroupDir is one cgroup of a lease, as recorded in the lease's state.
type cgroupDir struct {
	Path        string   `json:"path"`
	Version     int      `json:"version"`
	Controllers []string `json:"controllers,omitempty"` // the lease controllers it enforces
}

// leaseCgroups is the set of a lease's cgroups.
type leaseCgroups []cgroupDir

// byController returns the cgroup that enforces c, if any.
func (cs leaseCgroups) byController(c string) (cgroupDir, bool) {
	for _, d := range cs {
		if slices.Contains(d.Controllers, c) {
			return d, true
		}
	}
	return cgroupDir{}, false
}

// v2 returns the lease's cgroup2 cgroup, if any.
func (cs leaseCgroups) v2() (cgroupDir, bool) {
	for _, d := range cs {
		if d.Version == 2 {
			return d, true
		}
	}
	return cgroupDir{}, false
}

// createCgroups makes the lease's cgroups in sys and writes shape's limits: memory
// (swap included, so the limit cannot be dodged by swapping), pids and a CPU quota
// (period 100 ms). Every value is read back, so the lease records what the kernel
// enforces. On error every cgroup made so far is removed.
func createCgroups(sys cgroupSystem, leaseID string, shape environment.Shape) (leaseCgroups, error) {
	name := cgroupPrefix + leaseID
	var cs leaseCgroups
	fail := func(err error) (leaseCgroups, error) {
		_ = removeCgroups(cs, time.Second)
		return nil, err
	}
	byMount := map[string]int{}
	add := func(h *hierarchy, ctrl string) error {
		if i, ok := byMount[h.Mount]; ok {
			if ctrl != "" {
				cs[i].Controllers = append(cs[i].Controllers, ctrl)
			}
			return nil
		}
		dir := filepath.Join(h.ownDir(), name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		d := cgroupDir{Path: dir, Version: h.Version}
		if ctrl != "" {
			d.Controllers = []string{ctrl}
		}
		byMount[h.Mount] = len(cs)
		cs = append(cs, d)
		return nil
	}
	if sys.V2 != nil {
		if err := add(sys.V2, ""); err != nil {
			return fail(err)
		}
	}
	for _, c := range leaseControllers {
		h := sys.Serve[c]
		if h == nil {
			return fail(fmt.Errorf("no cgroup hierarchy serves the %s controller", c))
		}
		if err := add(h, c); err != nil {
			return fail(err)
		}
	}
	if err := writeLimits(cs, shape); err != nil {
		return fail(err)
	}
	return cs, nil
}

// cpuPeriodUS is the CFS period of a lease's CPU quota, in microseconds.
const cpuPeriodUS = 100_000

func writeLimits(cs leaseCgroups, shape environment.Shape) error {
	quota := max(int64(shape.CPUCores*cpuPeriodUS), 1000)
	for _, d := range cs {
		var writes [][2]string
		for _, c := range d.Controllers {
			switch {
			case !declares(shape, c): // no declared limit: the cgroup counts, it does not limit
			case c == ctrlMemory && d.Version == 1:
				writes = append(writes, [2]string{"memory.limit_in_bytes", itoa(shape.MemoryBytes)})
				if exists(filepath.Join(d.Path, "memory.memsw.limit_in_bytes")) {
					writes = append(writes, [2]string{"memory.memsw.limit_in_bytes", itoa(shape.MemoryBytes)})
				}
			case c == ctrlMemory:
				writes = append(writes, [2]string{"memory.max", itoa(shape.MemoryBytes)})
				if exists(filepath.Join(d.Path, "memory.swap.max")) {
					writes = append(writes, [2]string{"memory.swap.max", "0"})
				}
			case c == ctrlPIDs:
				writes = append(writes, [2]string{"pids.max", itoa(shape.PIDs)})
			case c == ctrlCPU && d.Version == 1:
				writes = append(writes, [2]string{"cpu.cfs_period_us", itoa(cpuPeriodUS)}, [2]string{"cpu.cfs_quota_us", itoa(quota)})
			case c == ctrlCPU:
				writes = append(writes, [2]string{"cpu.max", fmt.Sprintf("%d %d", quota, cpuPeriodUS)})
			}
		}
		for _, w := range writes {
			path := filepath.Join(d.Path, w[0])
			if err := os.WriteFile(path, []byte(w[1]), 0); err != nil {
				return fmt.Errorf("setting %s to %s: %w", path, w[1], err)
			}
			if got := readTrim(path); !limitMatches(w[0], w[1], got) {
				return fmt.Errorf("%s reads %q after writing %q", path, got, w[1])
			}
		}
	}
	return nil
}

// limitMatches compares a written limit with what the kernel reports: memory limits
// are rounded down to a page.
func limitMatches(file, want, got string) bool {
	if want == got {
		return true
	}
	if strings.HasPrefix(file, "memory.") {
		w, err1 := strconv.ParseInt(want, 10, 64)
		g, err2 := strconv.ParseInt(got, 10, 64)
		page := int64(os.Getpagesize())
		return err1 == nil && err2 == nil && g <= w && w-g < page
	}
	return false
}

// declares reports whether shape sets a limit for the lease controller c.
func declares(shape environment.Shape, c string) bool {
	switch c {
	case ctrlMemory:
		return shape.MemoryBytes > 0
	case ctrlPIDs:
		return shape.PIDs > 0
	case ctrlCPU:
		return shape.CPUCores > 0
	}
	return false
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// procs returns the union of the pids in cs's cgroup.procs files, sorted.
func (cs leaseCgroups) procs() ([]int, error) {
	seen := map[int]bool{}
	var errs []error
	for _, d := range cs {
		data, err := os.ReadFile(filepath.Join(d.Path, "cgroup.procs"))
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				seen[pid] = true
			}
		}
	}
	out := make([]int, 0, len(seen))
	for pid := range seen {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out, errors.Join(errs...)
}

// oomKills is the number of OOM kills the lease's memory cgroup counted
// (memory.oom_control's oom_kill in v1, memory.events' oom_kill in v2).
func (cs leaseCgroups) oomKills() (int64, bool) {
	d, ok := cs.byController(ctrlMemory)
	if !ok {
		return 0, false
	}
	if d.Version == 1 {
		return initproc.ReadCounter(filepath.Join(d.Path, "memory.oom_control"), "oom_kill")
	}
	return initproc.ReadCounter(filepath.Join(d.Path, "memory.events"), "oom_kill")
}

// forkRefusals is the number of forks the lease's pids cgroup refused (pids.events max).
func (cs leaseCgroups) forkRefusals() (int64, bool) {
	d, ok := cs.byController(ctrlPIDs)
	if !ok {
		return 0, false
	}
	return initproc.ReadCounter(filepath.Join(d.Path, "pids.events"), "max")
}

// killCgroups kills every process in cs and waits up to wait for them all to be gone.
// With the cgroup2 cgroup's cgroup.kill (and useKill) the kernel kills the whole tree
// atomically; otherwise every listed pid gets SIGKILL, repeatedly, until none is left
// (a fork between reading and killing is caught on the next round; the pids limit
// bounds how many there can be). It returns the processes found before killing and
// those still present at the end.
func killCgroups(cs leaseCgroups, useKill bool, wait time.Duration) (found []environment.Process, remaining []int, err error) {
	pids, err := cs.procs()
	for _, pid := range pids {
		found = append(found, environment.Process{PID: pid, Comm: comm(pid)})
	}
	if len(pids) == 0 {
		return nil, nil, err
	}
	killed := false
	if d, ok := cs.v2(); ok && useKill && exists(filepath.Join(d.Path, "cgroup.kill")) {
		killed = os.WriteFile(filepath.Join(d.Path, "cgroup.kill"), []byte("1"), 0) == nil
	}
	deadline := time.Now().Add(wait)
	for {
		pids, err = cs.procs()
		if len(pids) == 0 {
			return found, nil, err
		}
		if !killed || time.Until(deadline) < wait/2 {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if time.Now().After(deadline) {
			return found, pids, err
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// comm is a process's command name ("?" when it is gone).
func comm(pid int) string {
	if s := readTrim(fmt.Sprintf("/proc/%d/comm", pid)); s != "" {
		return s
	}
	return "?"
}

// removeCgroups removes cs's directories (rmdir succeeds only on an empty cgroup, so a
// removal is itself a confirmation), retrying busy ones until wait passes. It returns
// the directories that remain.
func removeCgroups(cs leaseCgroups, wait time.Duration) []string {
	deadline := time.Now().Add(wait)
	var left []string
	for _, d := range cs {
		for {
			err := syscall.Rmdir(d.Path)
			if err == nil || errors.Is(err, syscall.ENOENT) {
				break
			}
			if time.Now().After(deadline) {
				left = append(left, d.Path)
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return left
}
