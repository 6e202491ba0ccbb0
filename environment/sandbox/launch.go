package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/hostlease"
	"github.com/agentproof/agentproof/environment/sandbox/initproc"
	"github.com/agentproof/agentproof/worker"
)

// systemDirs are bound read-only at their own path into every sandbox (when they exist):
// the programs and libraries, and the few /etc entries programs need (TLS roots, the
// Debian alternatives that /usr/bin links point through, the dynamic linker's cache).
// Nothing else of the host is visible: never `--ro-bind / /`.
var systemDirs = []string{"/usr", "/etc/alternatives", "/etc/ssl", "/etc/ca-certificates"}

// copiedEtc are host /etc files every sandbox gets as a read-only copy (bubblewrap's
// --file: no mount, which costs bubblewrap a pass over the whole mount table each):
// the dynamic linker's cache. /etc/localtime, a link into /usr on Debian, is made the
// same link (else bound).
var copiedEtc = []string{"/etc/ld.so.cache"}

// etcNames are the sandbox's generated /etc files (etcFiles), copied in like copiedEtc.
var etcNames = []string{"passwd", "group", "hosts", "nsswitch.conf", "resolv.conf"}

// topLinks are the merged-/usr top-level entries: recreated as the same symbolic link
// when they are links on the host, bound read-only when they are directories.
var topLinks = []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// launchPlan is one launch's bwrap invocation: the host paths the launch's fork
// thread stages (index i is staged at stageDir/i) and bwrap's arguments, which name
// them by their staged paths.
type launchPlan struct {
	// stageDir is an empty directory the fork thread mounts its staging tmpfs on, in
	// its own mount namespace (on the host it stays empty; the sandbox user can
	// traverse its parents).
	stageDir string
	stage    []string
	args     []string
	// dests are the sandbox paths that binds are mounted on: bubblewrap makes each
	// one's mount point, an empty file or directory, in a writable /tmp (writesOutside
	// does not count them).
	dests []string
}

// staged returns the staged path of host path src, staging it once; without a
// staging directory (rootless) src itself, which bubblewrap binds as it is.
func (p *launchPlan) staged(src string) string {
	if p.stageDir == "" {
		return src
	}
	i := slices.Index(p.stage, src)
	if i < 0 {
		i = len(p.stage)
		p.stage = append(p.stage, src)
	}
	return filepath.Join(p.stageDir, strconv.Itoa(i))
}

func (p *launchPlan) add(args ...string) { p.args = append(p.args, args...) }

// bind adds a bind of the staged src at dest (flag --bind or --ro-bind).
func (p *launchPlan) bind(flag, src, dest string) {
	p.add(flag, p.staged(src), dest)
	p.dests = append(p.dests, dest)
}

// Launch prepares req.Spec inside the lease (see the package doc). The spec's working
// directory must be the workspace or a writable bind; writable binds must lie in the
// workspace or on the lease's disk. Errors: a *environment.SpecError naming every
// problem; filesystem errors preparing the launch directory.
func (p *Provider) Launch(_ context.Context, l *environment.Lease, req environment.LaunchRequest) (environment.Launched, error) {
	st, err := leaseState(l)
	if err != nil {
		return nil, err
	}
	spec := req.Spec
	probs := launchProblems(l, st, req)
	if len(probs) > 0 {
		return nil, &environment.SpecError{What: "sandbox launch", Problems: probs}
	}

	n, dir, scratch, err := hostlease.NewLaunch(l, st.Disk, 0o755, st.UID, st.GID, scratchNames...)
	if err != nil {
		return nil, fmt.Errorf("sandbox launch: %w", err)
	}
	listens, hosts := bridgeListens(l.Endpoints)
	x := &launched{lease: l, st: st, n: n, dir: dir, scratch: scratch, released: make(chan struct{})}
	if err := x.open(etcFiles(st.UID, st.GID, hosts)); err != nil {
		x.release()
		return nil, fmt.Errorf("sandbox launch: %w", err)
	}
	plan := p.plan(l, st, req, scratch, listens, planFDs{stageDir: x.stageDir, pass: len(spec.ExtraFiles), cgroups: len(x.cgroupFiles), etc: x.etcDests})
	x.stage, x.mountPoints = plan.stage, plan.dests
	wrapped := spec
	wrapped.Path, wrapped.Args, wrapped.Dir = st.Bwrap, append([]string{st.Bwrap}, plan.args...), "/"
	wrapped.ExtraFiles = slices.Concat(spec.ExtraFiles, []*os.File{x.statusW}, x.cgroupFiles, x.etcFiles)
	if st.UID != os.Geteuid() || st.GID != os.Getegid() {
		wrapped.Credential = &syscall.Credential{Uid: uint32(st.UID), Gid: uint32(st.GID), Groups: []uint32{}}
	}
	wrapped.Fork, wrapped.Stop = x.fork, stopInit
	x.spec = wrapped
	x.oom0, _ = st.Cgroups.oomKills()
	x.forks0, _ = st.Cgroups.forkRefusals()
	return x, nil
}

// open makes what a launch holds besides its directory: init's status pipe, the
// write ends of the lease cgroups' cgroup.procs files (init joins them), the /etc
// files bubblewrap copies in (etc, generated, then copiedEtc: pipes holding them and
// the host files, opened for reading) and the lease's staging mount point
// (stageDir), made at its first launch (none in a rootless lease: its sources are
// the controller's own and bubblewrap, running as the controller's user, binds them
// by path).
func (x *launched) open(etc map[string]string) error {
	var err error
	if x.statusR, x.statusW, err = os.Pipe(); err != nil {
		return fmt.Errorf("status pipe: %w", err)
	}
	for _, c := range x.st.Cgroups {
		f, err := os.OpenFile(filepath.Join(c.Path, "cgroup.procs"), os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("lease cgroup: %w", err)
		}
		x.cgroupFiles = append(x.cgroupFiles, f)
	}
	for _, name := range etcNames {
		r, err := pipeOf(etc[name])
		if err != nil {
			return fmt.Errorf("/etc/%s: %w", name, err)
		}
		x.etcFiles, x.etcDests = append(x.etcFiles, r), append(x.etcDests, "/etc/"+name)
	}
	for _, path := range copiedEtc {
		if f, err := os.Open(path); err == nil {
			x.etcFiles, x.etcDests = append(x.etcFiles, f), append(x.etcDests, path)
		}
	}
	if x.st.Rootless {
		return nil
	}
	x.stageDir = stageDir(x.lease.SocketDir)
	if err := os.Mkdir(x.stageDir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("staging directory: %w", err)
	}
	return nil
}

// pipeOf returns the reading end of a pipe holding content and closed for writing
// (content must fit the pipe's buffer: 64 KiB).
func pipeOf(content string) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	_, err = w.WriteString(content)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}

// release frees what the launch holds on the host (once): the fork thread, the
// status pipe, the cgroup files and the launch directory (the lease's staging
// directory goes with the lease: Cleanup).
func (x *launched) release() {
	x.releaseOnce.Do(func() {
		close(x.released)
		for _, f := range slices.Concat([]*os.File{x.statusR, x.statusW}, x.cgroupFiles, x.etcFiles) {
			if f != nil {
				_ = f.Close()
			}
		}
		_ = os.RemoveAll(x.dir)
	})
}

// launchProblems checks a launch request against its lease: an absolute program and
// an argv, writable binds only in the workspace or on the lease disk, read-only binds
// the sandbox user can read that cover no writable place, and a working directory in
// a writable place. It returns every problem (none: nil).
func launchProblems(l *environment.Lease, st state, req environment.LaunchRequest) []string {
	spec := req.Spec
	var probs []string
	if !filepath.IsAbs(spec.Path) || len(spec.Args) == 0 {
		probs = append(probs, "spec needs an absolute path and argv")
	} else if _, err := os.Stat(spec.Path); err != nil && !environment.Within(l.Workspace, spec.Path) {
		probs = append(probs, fmt.Sprintf("the agent's program: %v", err))
	}
	writable := []string{l.Workspace}
	for i, b := range req.Binds {
		switch {
		case b.At != "" && b.At != b.Path:
			probs = append(probs, fmt.Sprintf("binds[%d] %s: the sandbox binds a path at its own path, not at %s", i, b.Path, b.At))
		case !filepath.IsAbs(b.Path) || filepath.Clean(b.Path) != b.Path:
			probs = append(probs, fmt.Sprintf("binds[%d] %q must be an absolute, clean path", i, b.Path))
		case b.Write && !environment.Within(l.Workspace, b.Path) && !environment.Within(st.Disk, b.Path):
			probs = append(probs, fmt.Sprintf("binds[%d] %s is writable but outside the workspace and the lease disk %s (every writable byte must be under the disk cap)", i, b.Path, st.Disk))
		case b.Write:
			writable = append(writable, b.Path)
		}
	}
	for i, ro := range req.ReadOnly {
		if !filepath.IsAbs(ro) || filepath.Clean(ro) != ro {
			probs = append(probs, fmt.Sprintf("readOnly[%d] %q must be an absolute, clean path", i, ro))
			continue
		}
		if fi, err := os.Stat(ro); err != nil {
			probs = append(probs, fmt.Sprintf("readOnly[%d]: %v", i, err))
		} else if p := othersCannotRead(fi, st.UID); p != "" {
			probs = append(probs, fmt.Sprintf("readOnly[%d] %s %s", i, ro, p))
		}
		for _, w := range writable {
			if environment.Within(ro, w) {
				probs = append(probs, fmt.Sprintf("readOnly[%d] %s would cover the writable %s", i, ro, w))
			}
		}
	}
	if st.Rootless {
		probs = append(probs, nestedBinds(req, writable)...)
	}
	inWritable := false
	for _, w := range writable {
		inWritable = inWritable || environment.Within(w, spec.Dir)
	}
	if !inWritable {
		probs = append(probs, fmt.Sprintf("dir %s must be the workspace %s or inside a writable bind", spec.Dir, l.Workspace))
	}
	return probs
}

// nestedBinds lists the binds and read-only paths of a rootless launch that lie
// inside a writable place (writable: the workspace and the writable binds). The agent
// controls such a path between launches and could make it a link to any file of the
// controller's user, which bubblewrap, binding by path as that user, would follow; the
// root sandbox opens its bind sources without following links (stage) instead.
func nestedBinds(req environment.LaunchRequest, writable []string) []string {
	var probs []string
	check := func(what, path string) {
		for _, w := range writable {
			if w != path && environment.Within(w, path) {
				probs = append(probs, fmt.Sprintf("%s %s lies inside the writable %s: a rootless sandbox binds nothing there (the agent could make it a link between launches)", what, path, w))
				return
			}
		}
	}
	for i, b := range req.Binds {
		check(fmt.Sprintf("binds[%d]", i), b.Path)
	}
	for i, ro := range req.ReadOnly {
		check(fmt.Sprintf("readOnly[%d]", i), ro)
	}
	return probs
}

// othersCannotRead says why the sandbox user (uid, a stranger to the host's files) could
// not use a read-only bind: a directory needs r and x for others, a file r. A bind shows
// the inode with its own mode, so a 0700 directory stays closed inside.
func othersCannotRead(fi os.FileInfo, uid int) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid {
		return ""
	}
	need := os.FileMode(0o004)
	if fi.IsDir() {
		need = 0o005
	}
	if fi.Mode().Perm()&need != need {
		return fmt.Sprintf("has mode %04o: the sandbox user (uid %d) cannot read it inside; bind a world-readable path within it", fi.Mode().Perm(), uid)
	}
	return ""
}

// bridgeListens maps each endpoint to the address init listens on inside and the
// /etc/hosts lines: a loopback IPv4 listen address is used as it is; a DNS name gets
// the loopback alias 127.0.1.<i+1> and a hosts line.
func bridgeListens(eps []environment.Endpoint) (listens []string, hosts []string) {
	for i, e := range eps {
		host, port, err := environment.SplitHostPort(e.Listen)
		if err != nil {
			continue // the lease file was validated; an invalid endpoint is never served
		}
		addr := e.Listen
		if net.ParseIP(host) == nil {
			alias := fmt.Sprintf("127.0.1.%d", i+1)
			hosts = append(hosts, alias+" "+host)
			addr = net.JoinHostPort(alias, strconv.Itoa(port))
		}
		listens = append(listens, addr+"="+filepath.Join(BridgeDir, e.Name+".sock"))
	}
	return listens, hosts
}

// etcFiles are the sandbox's generated /etc files by name (etcNames): passwd and group
// with the sandbox user only, hosts (localhost and the endpoints' names), nsswitch.conf
// (files only) and an empty resolv.conf (there is no DNS: names are the allowlist).
func etcFiles(uid, gid int, hosts []string) map[string]string {
	return map[string]string{
		"passwd":        fmt.Sprintf("agent:x:%d:%d:agentproof sandbox:%s:/usr/sbin/nologin\n", uid, gid, Home),
		"group":         fmt.Sprintf("agent:x:%d:\n", gid),
		"hosts":         "127.0.0.1 localhost " + Hostname + "\n" + strings.Join(append(hosts, ""), "\n"),
		"nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
		"resolv.conf":   "# agentproof sandbox: no DNS; reachable names are in /etc/hosts\n",
	}
}

// planFDs is what a launch plan needs of the launch: the staging directory, the
// worker's extra files passed on to the agent (fds 3…), then init's status fd, the
// cgroup files, and the /etc files bubblewrap copies in, by their sandbox paths.
type planFDs struct {
	stageDir      string
	pass, cgroups int
	etc           []string
}

// plan builds the bwrap arguments of one launch (the order matters: a mount point
// must exist before what is mounted under it, and the read-only remounts come last).
func (p *Provider) plan(l *environment.Lease, st state, req environment.LaunchRequest, scratch string, listens []string, fds planFDs) *launchPlan {
	pl := &launchPlan{stageDir: fds.stageDir}
	pl.add("--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup")
	if versionAtLeast(st.BwrapVersion, 0, 8) {
		pl.add("--disable-userns")
	}
	pl.add("--die-with-parent", "--as-pid-1", "--hostname", Hostname,
		"--uid", strconv.Itoa(st.UID), "--gid", strconv.Itoa(st.GID))
	for _, d := range systemDirs {
		if exists(d) {
			pl.add("--ro-bind", d, d)
		}
	}
	for _, d := range topLinks {
		if target, err := os.Readlink(d); err == nil {
			pl.add("--symlink", target, d)
		} else if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			pl.add("--ro-bind", d, d)
		}
	}
	if target, err := os.Readlink("/etc/localtime"); err == nil && filepath.IsAbs(target) && underSystem(target) {
		pl.add("--symlink", target, "/etc/localtime")
	} else if exists("/etc/localtime") {
		pl.add("--ro-bind", "/etc/localtime", "/etc/localtime")
	}
	pl.add("--proc", "/proc", "--dev", "/dev")
	for j, dest := range fds.etc {
		pl.add("--perms", "0644", "--file", strconv.Itoa(4+fds.pass+fds.cgroups+j), dest)
	}
	pl.add("--bind", pl.staged(filepath.Join(scratch, "tmp")), "/tmp",
		"--bind", pl.staged(filepath.Join(scratch, "shm")), "/dev/shm",
		"--bind", pl.staged(filepath.Join(scratch, "home")), Home)
	pl.bind("--bind", l.Workspace, l.Workspace)
	binds := slices.Clone(req.Binds)
	slices.SortStableFunc(binds, func(a, b environment.Bind) int { return len(a.Path) - len(b.Path) })
	for _, b := range binds {
		flag := "--ro-bind"
		if b.Write {
			flag = "--bind"
		}
		pl.bind(flag, b.Path, b.Path)
	}
	ro := append([]string{st.Executable}, req.ReadOnly...)
	// (a rootless sandbox never binds a program that lies in a writable bind on its own:
	// its path is the agent's to change, nestedBinds)
	inWritableBind := st.Rootless && slices.ContainsFunc(req.Binds, func(b environment.Bind) bool { return b.Write && environment.Within(b.Path, req.Spec.Path) })
	if !underSystem(req.Spec.Path) && !slices.ContainsFunc(ro, func(r string) bool { return environment.Within(r, req.Spec.Path) }) &&
		!environment.Within(l.Workspace, req.Spec.Path) && !inWritableBind {
		ro = append(ro, req.Spec.Path)
	}
	slices.Sort(ro)
	for _, r := range slices.Compact(ro) {
		// Read-only sources are the controller's (its binary, CLI installs): their
		// links are resolved here, because staging never follows one.
		src := r
		if real, err := filepath.EvalSymlinks(r); err == nil {
			src = real
		}
		pl.bind("--ro-bind", src, r)
	}
	pl.add("--ro-bind", pl.staged(l.SocketDir), BridgeDir)
	pl.add("--remount-ro", "/dev", "--remount-ro", "/")
	pl.add("--chdir", req.Spec.Dir, "--", st.Executable, InitCommand,
		"--status-fd", strconv.Itoa(3+fds.pass), "--pass-fds", strconv.Itoa(fds.pass))
	for j := range fds.cgroups {
		pl.add("--cgroup-fd", strconv.Itoa(4+fds.pass+j))
	}
	for _, ls := range listens {
		pl.add("--listen", ls)
	}
	pl.add("--", req.Spec.Path)
	pl.add(req.Spec.Args...)
	return pl
}

func underSystem(path string) bool {
	for _, d := range append(slices.Clone(systemDirs), topLinks...) {
		if environment.Within(d, path) {
			return true
		}
	}
	return false
}

// launched is one prepared sandbox launch.
type launched struct {
	spec             worker.Spec
	lease            *environment.Lease
	st               state
	n                int
	dir, scratch     string
	statusR, statusW *os.File
	// cgroupFiles are the lease cgroups' cgroup.procs files, open for writing: init
	// joins them through these (it cannot reach the cgroup filesystem).
	cgroupFiles []*os.File
	// etcFiles hold the /etc files bubblewrap copies in at etcDests (open).
	etcFiles     []*os.File
	etcDests     []string
	oom0, forks0 int64
	// mountPoints are the sandbox paths binds were mounted on (launchPlan.dests).
	mountPoints []string
	// stageDir and stage: where the fork thread stages which host paths (launchPlan).
	stageDir string
	stage    []string
	// released is closed when the launch settles (release): a fork thread that could
	// not watch bubblewrap's exit waits for it.
	released    chan struct{}
	releaseOnce sync.Once
}

func (x *launched) Spec() worker.Spec { return x.spec }

// statusWait bounds how long Settle waits for init's exit report after the process
// was supervised (the report is written before init exits, so it is normally there).
const statusWait = 2 * time.Second

// Settle reads init's exit report, puts the agent's own exit into the outcome, reads
// the lease's OOM and fork-refusal counters and the disk's free space, and removes
// the launch's generated files (and, when the lease is not reused, its scratch).
func (x *launched) Settle(o worker.Outcome) environment.Settled {
	s := environment.Settled{Outcome: o, Facts: map[string]string{
		"provider": string(environment.ProviderSandbox), "lease": x.lease.ID, "launch": strconv.Itoa(x.n),
		"bwrap": x.st.BwrapVersion, "uid": strconv.Itoa(x.st.UID),
	}}
	if x.st.Rootless {
		s.Facts["rootless"] = "true"
	}
	if rep, err := SettleInit(&s, x.statusR, x.statusW, "sandbox init", "bubblewrap's"); err == nil && o.Started && rep.PID > 0 {
		s.Facts["agentPid"] = strconv.Itoa(rep.PID)
	}
	shape := x.lease.Shape
	_, memCgroup := x.st.Cgroups.byController(ctrlMemory)
	_, pidsCgroup := x.st.Cgroups.byController(ctrlPIDs)
	if oom, ok := x.st.Cgroups.oomKills(); !ok && memCgroup {
		s.Problems = append(s.Problems, "the memory cgroup's OOM counter is unreadable")
	} else if d := oom - x.oom0; ok && d > 0 {
		s.Limits = append(s.Limits, environment.LimitHit{Resource: environment.ResourceMemory, Limit: shape.MemoryBytes, Events: d,
			Detail: fmt.Sprintf("memory limit %d bytes: %d OOM kill(s)", shape.MemoryBytes, d)})
	}
	if forks, ok := x.st.Cgroups.forkRefusals(); !ok && pidsCgroup {
		s.Problems = append(s.Problems, "the pids cgroup's counter is unreadable")
	} else if d := forks - x.forks0; ok && d > 0 {
		s.Limits = append(s.Limits, environment.LimitHit{Resource: environment.ResourcePIDs, Limit: shape.PIDs, Events: d,
			Detail: fmt.Sprintf("pids limit %d: %d fork(s) refused", shape.PIDs, d)})
	}
	if w := writesOutside(x.scratch, x.mountPoints); w != "" {
		s.Facts[FactWritesOutside] = w
	}
	if full, err := hostlease.DiskFull(x.st.Disk); err == nil && full && x.st.DiskMounted {
		s.Limits = append(s.Limits, environment.LimitHit{Resource: environment.ResourceDisk, Limit: shape.DiskBytes, Events: 1,
			Detail: fmt.Sprintf("disk limit %d bytes: the lease disk is full", shape.DiskBytes)})
	}
	x.release()
	if !x.lease.Reuse {
		_ = os.RemoveAll(x.scratch)
	}
	return s
}

// FactWritesOutside is the launch fact naming what the agent left in the sandbox's
// writable places outside its workspace and its HOME (/tmp and /dev/shm, both on the
// lease disk): "<n> file(s), <bytes> bytes: /tmp/a, /dev/shm/b, …" (at most
// maxWritesNamed paths, each quoted when it holds anything unusual). Absent when they
// are empty. With a reused lease the scratch space is the lease's, so the list is
// what every launch so far left there.
const FactWritesOutside = "writesOutside"

// maxWritesNamed bounds the paths FactWritesOutside names.
const maxWritesNamed = 8

// writesOutside describes the files under scratch's tmp and shm directories (the
// sandbox's /tmp and /dev/shm) as FactWritesOutside does, or "" when there are none.
// Symbolic links and other non-directories are counted as files; nothing is followed.
// An empty file at one of mountPoints is bubblewrap's mount point for a bind, not the
// agent's.
func writesOutside(scratch string, mountPoints []string) string {
	var names []string
	var files, bytes int64
	for _, d := range []struct{ host, inside string }{{"tmp", "/tmp"}, {"shm", "/dev/shm"}} {
		root := filepath.Join(scratch, d.host)
		_ = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			fi, err := e.Info()
			if err == nil && fi.Mode().IsRegular() && fi.Size() == 0 && slices.Contains(mountPoints, d.inside+"/"+rel) {
				return nil
			}
			files++
			if err == nil && fi.Mode().IsRegular() {
				bytes += fi.Size()
			}
			if len(names) < maxWritesNamed {
				names = append(names, quoteUnusual(d.inside+"/"+rel))
			}
			return nil
		})
	}
	if files == 0 {
		return ""
	}
	more := ""
	if files > int64(len(names)) {
		more = fmt.Sprintf(" and %d more", files-int64(len(names)))
	}
	return fmt.Sprintf("%d file(s), %d bytes: %s%s", files, bytes, strings.Join(names, ", "), more)
}

// quoteUnusual is s, or s quoted (Go syntax) when it holds a space, a comma, a quote
// or a character that is not printable, and cut to 200 bytes.
func quoteUnusual(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if strings.ContainsAny(s, " ,\"\\") || strings.IndexFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// initStatus is the exit report init writes on its status fd.
type initStatus = initproc.Status

func readStatus(r StatusReader) (initStatus, error) {
	var st initStatus
	_ = r.SetReadDeadline(time.Now().Add(statusWait))
	data, err := io.ReadAll(io.LimitReader(r, 64<<10))
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		return st, err
	}
	if len(data) == 0 {
		return st, errors.New("init wrote nothing")
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("malformed report: %w", err)
	}
	if st.Schema != initproc.StatusSchema {
		return st, fmt.Errorf("report schema %q", st.Schema)
	}
	return st, nil
}
