package heartbeat

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentproof/agentproof/agent"
	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/environment"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/worker"
)

// Launch facts (api.LaunchFacts): what the runner observes launching a run's agent
// process, so that runtime checks grade what happened, not what the catalog declares.

// RuntimeNative is the runtime mode of every run this runner launches: it opens each
// run through the native run protocol (a checkout with a session, native events, a
// native completion).
const RuntimeNative = "native"

// VersionFlag is how the runner asks an agent CLI's binary for its version when no
// npm package ships it (LaunchFacts.VersionSource "--version").
const VersionFlag = "--version"

// maxPackageDepth is how many directories above an agent CLI's binary the runner looks
// for the package.json of the npm package that ships it.
const maxPackageDepth = 6

// coreVersionRE is the major.minor.patch of an npm package version (the platform
// packages of an agent CLI tag their version with the platform: "0.171.0-linux-x64").
var coreVersionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d+\.\d+\.\d+`) })

// versionProbeTimeout bounds `<binary> --version`; maxVersionOutput its output, bytes.
const (
	versionProbeTimeout = 10 * time.Second
	maxVersionOutput    = 4 << 10
)

// versionRE finds a version number in a CLI's --version output ("codex-cli 0.171.0",
// "1.18.33", "2.1.197 (Claude Code)").
var versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.-]+)?`) })

// maxArgvToken bounds one kept argv token of the argv shape, in bytes.
const maxArgvToken = 128

// binaryKey identifies one executable file version: device, inode, size and change
// times, from fstat of the opened file.
type binaryKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

// binaryFacts are the facts of one executable: its SHA-256 and, for an agent CLI, the
// version it reports, with what could not be observed.
type binaryFacts struct {
	sha256, version, versionSource string
	problems                       []string
}

// binaries caches binaryFacts per binaryKey for the runner's lifetime (an attempt's
// server launches the same CLI once per run; hashing a 300 MB binary once is enough).
type binaries struct {
	mu sync.Mutex
	m  map[binaryKey]*binaryEntry
}

type binaryEntry struct {
	once  sync.Once
	facts binaryFacts
}

// launchFacts returns the facts known before the launch (everything but the binary's
// digest and version and the process's identity) and starts observing the binary:
// the returned function waits for its digest (and, for a CLI, version) and completes
// the facts. The binary is opened here, before the launch, and hashed through that
// descriptor. The caller sets PID and ProcessStartTicks from the started process.
// sessionLaunchFacts marks the run's process as started at startedAt and answers the
// launch facts of a session process (ACP or Pi: spec's path and argv, the identity
// read by identity, or the problem reading it), launchFacts' observed func, and the
// identity with ok when it was read.
func (r *Runner) sessionLaunchFacts(j job, startedAt time.Time, spec worker.Spec, identity func() (session.ProcessIdentity, error), secrets *redact.Set) (facts *api.LaunchFacts, observed func(), id session.ProcessIdentity, ok bool) {
	r.mu.Lock()
	if cur := r.runs[j.runID]; cur != nil {
		cur.ProcessStartedAt = stamp(startedAt)
	}
	r.mu.Unlock()
	facts, observed = r.launchFacts(j, spec, secrets)
	id, err := identity()
	if err != nil {
		facts.Problems = append(facts.Problems, "the process identity could not be read: "+err.Error())
		return facts, observed, id, false
	}
	facts.PID, facts.ProcessStartTicks = id.PID, id.StartTime
	return facts, observed, id, true
}

func (r *Runner) launchFacts(j job, spec worker.Spec, secrets *redact.Set) (*api.LaunchFacts, func()) {
	f := &api.LaunchFacts{Driver: j.cfg.Driver.String(), AdapterType: adapterType(j.cfg.Driver), Provider: providerOf(j.cfg.Driver, j.cfg.DriverConfig),
		Binary: spec.Path, Argv: argvShape(spec.Args, secrets), RuntimeMode: RuntimeNative, EnvironmentID: j.env.ID, ExecutionTarget: targetOf(j.env)}
	// The pinned package: an exec CLI, or the real agent behind an acp:<agent> driver
	// (its npm package version is the version recorded).
	cli, isCLI := j.cfg.Driver.Package()
	if isCLI {
		f.CLIName = cli
	}
	// A JavaScript CLI runs as `node <entry script> …`: its binary is the entry script
	// (the file its install pinned and hashed), not Node.js.
	exe := spec.Path
	if dc := j.cfg.DriverConfig; isCLI && dc != nil && dc.Node != "" && spec.Path == dc.Node && len(spec.Args) > 1 {
		exe = spec.Args[1]
		f.Binary = exe
	}
	done := make(chan binaryFacts, 1)
	if fh, err := os.Open(exe); err != nil {
		done <- binaryFacts{problems: []string{"the binary could not be opened: " + err.Error()}}
	} else {
		go func() {
			defer fh.Close()
			known := r.cfg.KnownDigests
			if r.cfg.ExecutableDigest != nil && exe == r.cfg.Executable {
				if k, ok := r.cfg.ExecutableDigest(); ok {
					known = append(slices.Clip(known), k)
				}
			}
			done <- r.bins.observe(fh, exe, isCLI, filepath.Join(r.cfg.Dir, "probes"), known)
		}()
	}
	return f, func() {
		bf := <-done
		f.BinarySHA256, f.CLIVersion, f.VersionSource = bf.sha256, bf.version, bf.versionSource
		f.Problems = append(f.Problems, bf.problems...)
	}
}

// observe returns the facts of the executable opened as fh from path (cached per file
// version); a version probe runs in a fresh directory below probes. The digest of a
// file version in known (Config.KnownDigests: the agentproof binary `run` hashed once,
// a pinned CLI's binary as its install hashed it) is taken from there instead of
// hashing the file; a CLI's version is still probed.
func (b *binaries) observe(fh *os.File, path string, probeVersion bool, probes string, known []api.KnownDigest) binaryFacts {
	v, err := api.FileVersion(fh)
	if err != nil {
		return binaryFacts{problems: []string{"the binary could not be examined: " + err.Error()}}
	}
	knownSum := ""
	for _, k := range known {
		if k.SHA256 != "" && k.Dev == v.Dev && k.Ino == v.Ino && k.Size == v.Size && k.MtimeNs == v.MtimeNs && k.CtimeNs == v.CtimeNs {
			knownSum = k.SHA256
			break
		}
	}
	if knownSum != "" && !probeVersion {
		return binaryFacts{sha256: knownSum}
	}
	key := binaryKey{dev: v.Dev, ino: v.Ino, size: v.Size, mtime: v.MtimeNs, ctime: v.CtimeNs}
	b.mu.Lock()
	if b.m == nil {
		b.m = map[binaryKey]*binaryEntry{}
	}
	e := b.m[key]
	if e == nil {
		e = &binaryEntry{}
		b.m[key] = e
	}
	b.mu.Unlock()
	e.once.Do(func() { e.facts = examine(fh, path, probeVersion, probes, knownSum) })
	return e.facts
}

// examine hashes the open file (unless its digest is known: the caller matched its
// file version with a known digest) and, for a CLI, asks the binary for its version.
func examine(fh *os.File, path string, probeVersion bool, probes, knownSum string) binaryFacts {
	var bf binaryFacts
	if knownSum != "" {
		bf.sha256 = knownSum
	} else {
		h := sha256.New()
		if _, err := io.Copy(h, fh); err != nil {
			bf.problems = append(bf.problems, "the binary could not be hashed: "+err.Error())
		} else {
			bf.sha256 = hex.EncodeToString(h.Sum(nil))
		}
	}
	if !probeVersion {
		return bf
	}
	if v, source, ok := packageVersion(path); ok {
		bf.version, bf.versionSource = v, source
		return bf
	}
	v, err := probe(path, probes)
	if err != nil {
		bf.problems = append(bf.problems, err.Error())
	}
	bf.version, bf.versionSource = v, VersionFlag
	return bf
}

// packageVersion reads the version of the npm package that ships the binary at path:
// the nearest package.json in the binary's directory or up to maxPackageDepth above
// it, inside a node_modules tree, whose version starts with major.minor.patch. source
// names the package and its version as written ("package.json of @openai/codex:
// 0.171.0-linux-x64").
func packageVersion(path string) (version, source string, ok bool) {
	dir := filepath.Dir(path)
	for range maxPackageDepth {
		if !strings.Contains(filepath.ToSlash(dir)+"/", "/node_modules/") {
			break
		}
		b, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err == nil {
			var pkg struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			}
			if json.Unmarshal(b, &pkg) == nil {
				if v := coreVersionRE().FindString(pkg.Version); v != "" {
					return v, fmt.Sprintf("package.json of %s: %s", pkg.Name, pkg.Version), true
				}
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", "", false
}

// probe runs `<path> --version` bounded (time, output), with no environment but PATH
// and a HOME of its own (a fresh directory below probes, removed afterwards: the
// agent's state stays the agent's), and returns the first version number it printed
// (stdout, else stderr).
func probe(path, probes string) (string, error) {
	if err := os.MkdirAll(probes, 0o700); err != nil {
		return "", fmt.Errorf("the version probe has no directory: %w", err)
	}
	dir, err := os.MkdirTemp(probes, "probe-")
	if err != nil {
		return "", fmt.Errorf("the version probe has no directory: %w", err)
	}
	defer os.RemoveAll(dir)
	o, err := worker.Supervise(context.Background(), worker.Spec{Path: path, Args: []string{filepath.Base(path), VersionFlag},
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "LANG=C"}, Dir: dir, Timeout: versionProbeTimeout,
		MaxOutputBytes: maxVersionOutput, NullStdin: true})
	if err != nil {
		return "", fmt.Errorf("the version probe could not start: %w", err)
	}
	if !o.Started || o.TimedOut {
		return "", fmt.Errorf("the version probe did not finish (%s)", agent.Summarize(o))
	}
	for _, out := range [][]byte{o.Output.Stdout(), o.Output.Stderr()} {
		if v := versionRE().Find(out); v != nil {
			return string(v), nil
		}
	}
	return "", fmt.Errorf("%s %s printed no version number", filepath.Base(path), VersionFlag)
}

// adapterType is the adapter kind a driver is: fixture, exec, <cli>_local,
// acp_<agent> or agentproof_builtin.
func adapterType(d driver.Name) string {
	switch cli, isCLI := d.CLI(); {
	case d.Kind == driver.KindFixture:
		return "fixture"
	case d.Kind == driver.KindExec:
		return "exec"
	case isCLI:
		return cli + "_local"
	case d.Kind == driver.KindACP:
		return "acp_" + d.Arg
	case d.Kind == driver.KindRPC:
		return d.Arg + "_rpc"
	case d.Kind == driver.KindApp && d.Arg == driver.AppClaude:
		return "claude_stream_json"
	case d.Kind == driver.KindApp:
		return d.Arg + "_app_server"
	}
	return "agentproof_builtin"
}

// providerOf is who serves the model of a run launched with driver and its driver
// configuration: "agentproof" for agents without a model, "scripted" for a CLI pointed
// at the attempt's scripted model on a loopback address, the live provider's host for
// a live CLI, "" when the runner cannot know (exec).
func providerOf(d driver.Name, dc *api.DriverConfig) string {
	if d.Kind == driver.KindExec {
		return ""
	}
	if _, isCLI := d.CLI(); !isCLI && d.Kind != driver.KindRPC && d.Kind != driver.KindApp && (d.Kind != driver.KindACP || d.BuiltinACP()) {
		return "agentproof"
	}
	if dc == nil {
		return ""
	}
	if dc.ModelBaseURL != "" {
		if u, err := url.Parse(dc.ModelBaseURL); err == nil {
			if ip := net.ParseIP(u.Hostname()); u.Hostname() == "localhost" || ip != nil && ip.IsLoopback() {
				return "scripted"
			}
			return u.Hostname()
		}
	}
	if dc.Live != nil {
		if u, err := url.Parse(dc.Live.BaseURL); err == nil {
			return u.Hostname()
		}
	}
	return ""
}

// targetOf is the kind of execution target an environment is.
func targetOf(e *controlplane.Environment) string {
	if e.Kind == controlplane.LocalEnvironment || environment.ProviderName(e.Kind).Leased() { // a sandbox or container runs on this machine
		return "local"
	}
	return "remote"
}

// argvShape is argv without anything that could be a secret or prompt text: argv[0]'s
// base name, each flag (a short token starting with "-") kept up to "=", every other
// token "<value>"; kept tokens are redacted with the run's secrets too.
func argvShape(args []string, secrets *redact.Set) []string {
	if len(args) == 0 {
		return []string{}
	}
	out := []string{filepath.Base(args[0])}
	for _, a := range args[1:] {
		flag, _, hasValue := strings.Cut(a, "=")
		switch {
		case !strings.HasPrefix(a, "-") || len(flag) < 2 || len(flag) > maxArgvToken || strings.ContainsAny(flag, " \t\n"):
			out = append(out, "<value>")
		case hasValue:
			out = append(out, secrets.RedactText(flag)+"=<value>")
		default:
			out = append(out, secrets.RedactText(flag))
		}
	}
	return out
}

// procStartTicks is the start time of process pid in clock ticks since boot: field 22
// of /proc/<pid>/stat (proc(5)); the fields are counted after the command's closing
// parenthesis, since the command name may hold spaces and parentheses.
func procStartTicks(pid int) (uint64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat has no command field", pid)
	}
	// After ") " come fields 3 (state), 4, …; field 22 is the 20th of them.
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat has %d fields after the command, want at least 20", pid, len(fields))
	}
	return strconv.ParseUint(fields[19], 10, 64)
}
