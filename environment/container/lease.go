package container

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/environment/hostlease"
)

// Labels every container of a lease carries.
const (
	labelProvider   = "agentproof.provider"
	labelLease      = "agentproof.lease"
	labelOwnerPID   = "agentproof.owner-pid"
	labelOwnerStart = "agentproof.owner-start"
	labelOwner      = "agentproof.owner"
	labelLeaseDir   = "agentproof.lease-dir"
	labelSocketDir  = "agentproof.socket-dir"
	labelStatusDir  = "agentproof.status-dir" // a docker launch's status socket directory
)

// Setup creates a container lease (see the package doc), the provider's first one after
// removing the orphans of dead owners (Sweep). spec needs a pinned shape, a lease root and an image by
// digest that the engine has locally. Errors: a *environment.SpecError for an invalid
// spec; a wrapped error naming what failed on the host (not root, no podman, the image
// missing, tmpfs refused). On error, whatever was made is destroyed again.
func (p *Provider) Setup(ctx context.Context, spec environment.LeaseSpec) (*environment.Lease, error) {
	if probs := p.specProblems(spec); len(probs) > 0 {
		return nil, &environment.SpecError{What: "container lease spec", Problems: probs}
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("container lease: this provider needs root here (the lease disk's tmpfs; rootless podman is not supported yet); see `agentproof environments probe`")
	}
	eng := *p.opt.Engine
	version, err := eng.Version(ctx)
	if err != nil {
		return nil, fmt.Errorf("container lease: %s: %w", eng.Name, err)
	}
	p.swept.Do(func() { _, _ = p.Sweep(ctx) }) // a failed sweep leaves orphans for the next one; this lease is unaffected
	img, err := p.image(ctx, eng, spec.Image)
	if err != nil {
		return nil, fmt.Errorf("container lease: %w", err)
	}
	if img.Ref != spec.Image {
		return nil, fmt.Errorf("container lease: image %s resolves to %s: the digest does not match", spec.Image, img.Ref)
	}
	l, err := hostlease.New(spec, environment.ProviderContainer, p.opt.Now())
	if err != nil {
		return nil, err
	}
	l.Image, l.Workdir, l.WorkspaceMounts, l.Tmpfs = spec.Image, spec.Workdir, spec.WorkspaceMounts, spec.Tmpfs
	st := state{Engine: eng.Name, EnginePath: eng.Path, Runtime: eng.Runtime, EngineVersion: version, ImageID: img.ID,
		UID: NobodyID, GID: NobodyID, Executable: p.opt.Executable, Disk: filepath.Join(l.Dir, "disk"),
		OwnerPID: os.Getpid(), OwnerStart: processStart(os.Getpid()), Owner: spec.Owner}
	err = hostlease.Build(ctx, l, spec.Endpoints, &st, func() error {
		if err := provision(l, st, spec); err != nil {
			return err
		}
		return seedWorkdir(ctx, eng, l, st)
	}, p.Cleanup)
	if err != nil {
		return nil, fmt.Errorf("container lease: %w", err)
	}
	return l, nil
}

// specProblems lists what makes spec unusable for a container lease: the spec's own
// problems, a shape that is not pinned or valid, an image not named by digest, no
// usable engine, and an agentproof executable that is missing or not static.
func (p *Provider) specProblems(spec environment.LeaseSpec) []string {
	probs := hostlease.SpecProblems(spec, environment.ProviderContainer)
	if msg := ImageRefProblem(spec.Image); msg != "" {
		probs = append(probs, msg)
	}
	if msg := insidePathProblem("workdir", spec.Workdir); spec.Workdir != "" && msg != "" {
		probs = append(probs, msg)
	}
	probs = append(probs, MountProblems(spec.WorkspaceMounts, spec.Tmpfs)...)
	switch {
	case p.opt.Engine == nil:
		probs = append(probs, "no container engine is installed (Debian/Ubuntu: apt-get install podman runc)")
	case p.opt.Engine.Name != EnginePodman && p.opt.Engine.Name != EngineDocker:
		probs = append(probs, fmt.Sprintf("the container engine %q is not supported: podman and docker are", p.opt.Engine.Name))
	}
	if msg := staticProblem(p.opt.Executable); msg != "" {
		probs = append(probs, msg)
	}
	return probs
}

// staticProblem says why exe cannot be a container's init: missing, not an ELF file,
// or dynamically linked (the image brings its own libraries or none). "" when it is a
// static executable.
func staticProblem(exe string) string {
	if !filepath.IsAbs(exe) {
		return "the agentproof executable is unknown (Options.Executable)"
	}
	f, err := elf.Open(exe)
	if err != nil {
		return fmt.Sprintf("the agentproof executable %s: %v", exe, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Sprintf("the agentproof executable %s is dynamically linked: a container runs it as its init with the image's libraries, so build it static (CGO_ENABLED=0 go build ./cmd/agentproof)", exe)
		}
	}
	return ""
}

// provision makes lease l's host resources: the lease disk (a tmpfs of the pinned disk
// size owned by the container user) with HOME and /tmp, the launches directory, and
// the workspace (a new one on the disk, or spec's directory given to the container
// user). Errors name the step that failed.
func provision(l *environment.Lease, st state, spec environment.LeaseSpec) error {
	for _, d := range []string{st.Disk, filepath.Join(l.Dir, "launches")} {
		if err := os.Mkdir(d, 0o711); err != nil {
			return err
		}
	}
	if err := hostlease.MountDisk(st.Disk, spec.Shape.DiskBytes, st.UID, st.GID); err != nil {
		return err
	}
	if err := hostlease.MakeScratch(st.Disk, st.UID, st.GID, scratchNames...); err != nil {
		return err
	}
	return hostlease.Workspace(l, spec.Workspace, st.Disk, st.UID, st.GID, "container user")
}

// scratchNames are a launch's scratch directories (hostlease.MakeScratch): HOME and /tmp.
var scratchNames = []string{"home", "tmp"}

// processStart is pid's start time in clock ticks after boot (field 22 of
// /proc/<pid>/stat), "" when unreadable.
func processStart(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19] // field 22 overall; fields after the command start at field 3
}

// image is ref as the engine resolves it, asked once per provider.
func (p *Provider) image(ctx context.Context, eng Engine, ref string) (Image, error) {
	if img, ok := p.images.Load(ref); ok {
		return img.(Image), nil
	}
	img, err := eng.Inspect(ctx, ref)
	if err != nil {
		return Image{}, err
	}
	p.images.Store(ref, img)
	return img, nil
}

// insidePathProblem says what is wrong with path as a mount point inside a container
// (absolute, clean, not the root, not under the bridge's directory, no ':' or ',', which
// a volume cannot name); "" when it is usable.
func insidePathProblem(what, path string) string {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || path == "/" || strings.ContainsAny(path, ":,") ||
		environment.Within(BridgeDir, path) || environment.Within(path, BridgeDir) {
		return fmt.Sprintf("%s %q must be an absolute, clean path inside the container (not /, not the bridge's %s, without ':' or ',')", what, path, BridgeDir)
	}
	return ""
}

// seedWorkdir copies the image's files at l.Workdir into the lease's workspace (what
// the image's Dockerfile put at its working directory: a task's starting files) and
// gives them to the container user; nothing when the lease has no workdir or the image
// has nothing there. The image is mounted read-only by the engine for the copy.
func seedWorkdir(ctx context.Context, eng Engine, l *environment.Lease, st state) error {
	if l.Workdir == "" {
		return nil
	}
	if eng.Name == EngineDocker {
		if err := eng.dockerSeedWorkdir(ctx, st.ImageID, l.Workdir, l.Workspace); err != nil {
			return err
		}
		return hostlease.ChownTree(l.Workspace, st.UID, st.GID)
	}
	root, err := eng.run(ctx, "image", "mount", l.Image)
	if err != nil {
		return fmt.Errorf("mounting the image to seed the workspace from %s: %w", l.Workdir, err)
	}
	defer func() { _, _ = eng.run(context.WithoutCancel(ctx), "image", "unmount", l.Image) }()
	src := filepath.Join(root, l.Workdir)
	if fi, err := os.Lstat(src); err != nil || !fi.IsDir() {
		return nil // the image has no such directory: the workspace starts as it is
	}
	cmd := exec.CommandContext(ctx, "cp", "-a", "--no-preserve=ownership", src+"/.", l.Workspace+"/")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("seeding the workspace from the image's %s: %v: %s", l.Workdir, err, strings.TrimSpace(string(out)))
	}
	return hostlease.ChownTree(l.Workspace, st.UID, st.GID)
}
