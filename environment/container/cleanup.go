package container

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/hostlease"
)

// Cleanup destroys a container lease and confirms it (see environment.Provider): it
// removes (killing first) every container labelled with the lease and checks that the
// engine lists none any more, records what the disk held, unmounts it, removes the
// lease directory, the socket directory and the status directories of docker launches
// Settle did not see, and checks that nothing of them remains.
// The caller's workspace (outside the lease directory) is kept. A bridge served by
// this process should be closed first.
func (p *Provider) Cleanup(ctx context.Context, l *environment.Lease) (r environment.CleanupReport) {
	r = environment.CleanupReport{LeaseID: l.ID}
	defer func() { r.EndedAt = p.opt.Now().UTC() }()
	st, err := leaseState(l)
	if err != nil {
		r.Errors = append(r.Errors, err.Error())
		return r
	}
	ctx = context.WithoutCancel(ctx)
	eng := st.engine()
	found, err := eng.listContainers(ctx, labelLease+"="+l.ID)
	if err != nil {
		r.Errors = append(r.Errors, "listing the lease's containers: "+err.Error())
	}
	r.Found.Containers = found
	if len(found) > 0 { // none listed is the confirmation itself
		statusDirs := eng.statusDirs(ctx, l.ID)
		if err := eng.remove(ctx, found...); err != nil {
			r.Errors = append(r.Errors, "removing the lease's containers: "+err.Error())
		}
		if left, err := eng.listContainers(ctx, labelLease+"="+l.ID); err != nil {
			r.Errors = append(r.Errors, "confirming the containers' removal: "+err.Error())
		} else {
			r.Remaining.Containers = left
		}
		removeStatusDirs(statusDirs, &r)
	}
	hostlease.Unmount(l, st.Disk, p.opt.RemoveWait, &r)
	hostlease.RemoveDirs(l, &r)
	r.Confirmed = r.Remaining.Empty() && len(r.Errors) == 0
	return r
}

// statusDirs are the status directories of lease leaseID's docker containers (the
// launches Settle did not see: their engine process was killed), nil with podman.
func (e Engine) statusDirs(ctx context.Context, leaseID string) []string {
	if e.Name != EngineDocker {
		return nil
	}
	out, _ := e.run(ctx, "ps", "--all", "--filter", "label="+labelLease+"="+leaseID, "--format", `{{.Label "`+labelStatusDir+`"}}`)
	return strings.Fields(out)
}

// removeStatusDirs removes each directory of dirs that has a status directory's shape,
// recording in r one that remains.
func removeStatusDirs(dirs []string, r *environment.CleanupReport) {
	for _, dir := range dirs {
		if !hostlease.ValidSocketDir(dir) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			r.Remaining.Files = append(r.Remaining.Files, dir)
			r.Remaining.FileCount++
		}
	}
}

// listContainers names the containers (running or not) that carry label (key=value).
func (e Engine) listContainers(ctx context.Context, label string) ([]string, error) {
	out, err := e.run(ctx, "ps", "--all", "--filter", "label="+label, "--format", "{{.Names}}")
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// remove kills and removes the named containers; a container already gone is no error
// (docker's rm has no --ignore: when it fails, the names it left are asked about).
func (e Engine) remove(ctx context.Context, names ...string) error {
	if e.Name != EngineDocker {
		_, err := e.run(ctx, append([]string{"rm", "--force", "--ignore", "--time", "0"}, names...)...)
		return err
	}
	_, err := e.run(ctx, append([]string{"rm", "--force"}, names...)...)
	if err == nil {
		return nil
	}
	for _, n := range names {
		if there, xerr := e.exists(ctx, n); there || xerr != nil {
			return err
		}
	}
	return nil
}

// exists reports whether the engine still knows container name (docker has no
// `container exists`: its list filtered by the exact name is asked).
func (e Engine) exists(ctx context.Context, name string) (bool, error) {
	if e.Name == EngineDocker {
		out, err := e.run(ctx, "ps", "--all", "--filter", "name=^"+regexp.QuoteMeta(name)+"$", "--format", "{{.Names}}")
		return slices.Contains(strings.Fields(out), name), err
	}
	_, err := e.run(ctx, "container", "exists", name)
	if err == nil {
		return true, nil
	}
	switch exitCode(err) {
	case 1:
		return false, nil
	}
	return false, err
}

// Orphan is a container Sweep found without a live owner, and what became of it.
type Orphan struct {
	Name    string `json:"name"`
	Lease   string `json:"lease"`
	Owner   string `json:"owner,omitempty"`
	Removed bool   `json:"removed"`
}

// Sweep removes the containers of this provider whose owner (the process that set
// their lease up) is gone — a campaign killed before its cleanup — together with the
// lease disk mounted for them and their socket directory. A container whose owner
// lives (its pid runs with the labelled start time) is never touched. It returns
// what it found; the error joins the engine's failures.
func (p *Provider) Sweep(ctx context.Context) ([]Orphan, error) {
	if p.opt.Engine == nil {
		return nil, nil
	}
	eng := *p.opt.Engine
	label := "{{index .Labels %q}}"
	if eng.Name == EngineDocker {
		label = `{{.Label %q}}` // docker's .Labels is one string; .Label gives one value
	}
	var fields []string
	for _, k := range []string{labelLease, labelOwnerPID, labelOwnerStart, labelOwner, labelLeaseDir, labelSocketDir, labelStatusDir} {
		fields = append(fields, fmt.Sprintf(label, k))
	}
	format := "{{.Names}}|" + strings.Join(fields, "|")
	out, err := eng.run(ctx, "ps", "--all", "--filter", "label="+labelProvider+"="+string(environment.ProviderContainer), "--format", format)
	if err != nil {
		return nil, err
	}
	var orphans []Orphan
	var errs []error
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, "|")
		if len(f) != 8 || f[0] == "" {
			continue
		}
		pid, _ := strconv.Atoi(f[2])
		if pid > 0 && processStart(pid) == f[3] && f[3] != "" {
			continue // its owner lives
		}
		o := Orphan{Name: f[0], Lease: f[1], Owner: f[4]}
		if err := eng.remove(ctx, o.Name); err != nil {
			errs = append(errs, err)
		} else {
			o.Removed = true
		}
		sweepLeaseDirs(f[1], f[5], f[6], f[7])
		orphans = append(orphans, o)
	}
	return orphans, errors.Join(errs...)
}

// sweepUnmountWait bounds how long Sweep retries a busy orphaned disk (the engine may
// still be tearing the removed container's mounts down).
const sweepUnmountWait = 5 * time.Second

// sweepLeaseDirs unmounts an orphaned lease's disk and removes its socket directory
// and a docker launch's status directory, when the labelled paths have the shapes this
// provider gives them (a lease directory named for the lease, socket directories of
// MakeSocketDir's shape).
func sweepLeaseDirs(leaseID, leaseDir, socketDir, statusDir string) {
	if environment.ValidLeaseID(leaseID) && filepath.IsAbs(leaseDir) && filepath.Base(leaseDir) == leaseID {
		_, _ = hostlease.UnmountAll(filepath.Join(leaseDir, "disk"), sweepUnmountWait)
	}
	for _, dir := range []string{socketDir, statusDir} {
		if hostlease.ValidSocketDir(dir) {
			_ = os.RemoveAll(dir)
		}
	}
}
