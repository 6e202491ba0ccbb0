package sandbox

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/agentproof/agentproof/environment"
)

// The rootless sandbox: a controller that is not root runs the same bwrap sandbox in
// a user namespace of its own (unprivileged user namespaces), as itself. What it
// cannot do without root, and what follows (docs/environments.md "Without root"):
//
//   - mount the lease disk on the host: the disk is a plain directory of the lease,
//     so a disk limit cannot be enforced;
//   - create cgroups in a cgroup v1 hierarchy or in a cgroup v2 subtree that is not
//     delegated to it: cpu, memory and pids limits are enforced only through a
//     delegated cgroup v2 subtree (the lease's cgroup is made there as root's is);
//   - stage bind sources in a private mount namespace: bubblewrap, running as the
//     controller's user, binds them by path (they are that user's own files).
//
// Every process of a launch stays in the sandbox's PID namespace, whose init is PID 1:
// when init ends, the kernel kills whatever is left, and bubblewrap's parent-death
// signal ends init when its supervisor dies. A lease whose shape declares a limit
// this machine cannot enforce is refused (Setup), and its environment's cells are not
// run here (environment.ProbeReport.UnenforcedReason), never run without the limit.

// rootless reports whether this process runs the rootless sandbox (it is not root).
func rootless() bool { return os.Geteuid() != 0 }

// cgroupController maps a lease controller to the Shape resource it limits.
var cgroupController = map[string]environment.Resource{
	ctrlCPU: environment.ResourceCPU, ctrlMemory: environment.ResourceMemory, ctrlPIDs: environment.ResourcePIDs,
}

// Needs of a limit this machine cannot enforce (environment.Limit.Needs).
const (
	needsV2Delegation = "needs cgroup v2 delegation"
	needsRootDisk     = "needs root (the lease disk is a size-capped tmpfs mounted on the host)"
)

// howToDelegate says how a normal user gets the cgroup limits.
const howToDelegate = "to get it: a cgroup v2 machine (boot with systemd.unified_cgroup_hierarchy=1) and agentproof run in a delegated " +
	"systemd user scope (systemd-run --user --scope -p Delegate=yes agentproof run …), or agentproof run as root"

// rootlessLimits is what a normal user's sandbox can enforce here, per resource, from
// the discovered cgroups (sysErr: discovery failed): cpu, memory and pids when a
// cgroup v2 subtree this user can create cgroups in serves the controller (tried for
// real: a child cgroup is made and removed), never disk.
func rootlessLimits(sys cgroupSystem, sysErr error) []environment.Limit {
	var out []environment.Limit
	for _, c := range []string{ctrlCPU, ctrlMemory, ctrlPIDs} {
		l := environment.Limit{Resource: cgroupController[c]}
		h := sys.Serve[c]
		switch {
		case sysErr != nil:
			l.Needs, l.Detail = needsV2Delegation+"; the cgroups are unreadable", sysErr.Error()
		case h != nil && h.Version == 2 && probeCgroup(h.ownDir()) == nil:
			l.Enforced, l.Detail = true, fmt.Sprintf("the lease's cgroup in the cgroup v2 subtree %s delegated to uid %d", h.ownDir(), os.Geteuid())
		case sys.V2 == nil || h == nil || h.Version == 1:
			l.Needs = needsV2Delegation + "; this machine has cgroup v1"
			l.Detail = fmt.Sprintf("%s controller: %s; only root creates cgroups there; %s", c, v1Where(sys, h, c), howToDelegate)
		default:
			l.Needs = needsV2Delegation + "; the cgroup v2 subtree " + sys.V2.ownDir() + " is not delegated to this user"
			l.Detail = fmt.Sprintf("%s controller: %s; %s", c, v2Where(sys, h), howToDelegate)
		}
		out = append(out, l)
	}
	return append(out, environment.Limit{Resource: environment.ResourceDisk, Needs: needsRootDisk,
		Detail: "without root the lease disk is a plain directory of the lease (a tmpfs mounted on the host needs root); run agentproof as root for a disk limit"})
}

// v1Where names the cgroup v1 hierarchy serving a controller (h, nil: none) and,
// on a hybrid machine, why the cgroup2 hierarchy does not serve it.
func v1Where(sys cgroupSystem, h *hierarchy, c string) string {
	where := "no hierarchy serves it"
	if h != nil {
		where = "cgroup v1 at " + h.ownDir()
	}
	if sys.V2 != nil {
		var notes []string
		for _, n := range sys.Notes {
			if strings.Contains(n, " "+c+" ") {
				notes = append(notes, n)
			}
		}
		where += " (hybrid: " + strings.Join(notes, "; ") + ")"
	}
	return where
}

// v2Where says why a cgroup v2 subtree serving a controller (h) gives this user no
// cgroup.
func v2Where(_ cgroupSystem, h *hierarchy) string {
	var st syscall.Stat_t
	if syscall.Stat(h.ownDir(), &st) == nil {
		return fmt.Sprintf("cgroup v2 at %s, owned by uid %d, not writable by uid %d", h.ownDir(), st.Uid, os.Geteuid())
	}
	return "cgroup v2 at " + h.ownDir()
}

// rootLimits is what root's sandbox enforces here: each cgroup controller whose check
// passed (cgroupOK) and the disk when a tmpfs could be mounted (diskErr nil).
func rootLimits(sys cgroupSystem, cgroupOK map[string]bool, diskErr error) []environment.Limit {
	var out []environment.Limit
	for _, c := range []string{ctrlCPU, ctrlMemory, ctrlPIDs} {
		l := environment.Limit{Resource: cgroupController[c], Enforced: cgroupOK[c]}
		if h := sys.Serve[c]; h != nil {
			l.Detail = fmt.Sprintf("the lease's cgroup under cgroup v%d at %s", h.Version, h.ownDir())
		}
		if !l.Enforced {
			l.Needs, l.Detail = needsCgroup, "no writable cgroup serves "+c
		}
		out = append(out, l)
	}
	d := environment.Limit{Resource: environment.ResourceDisk, Enforced: diskErr == nil, Detail: "the lease disk: a tmpfs of the declared size mounted on the host"}
	if diskErr != nil {
		d.Needs, d.Detail = "cannot mount the lease disk (a tmpfs)", diskErr.Error()
	}
	return append(out, d)
}

// unenforced lists, for a lease of shape set up by a normal user, the declared limits
// limits says this machine cannot enforce (environment.ProbeReport.UnenforcedReason's
// sentence), "" when there are none.
func unenforced(shape environment.Shape, limits []environment.Limit) string {
	return environment.ProbeReport{Limits: limits}.UnenforcedReason(shape.Declared())
}
