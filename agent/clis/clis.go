// Package clis installs and locates the pinned real agent CLIs agentproof qualifies
// (docs/clis.md): Codex (@openai/codex), OpenCode (opencode-ai), the
// ACP agents Codex ACP (@zed-industries/codex-acp) and Gemini CLI (@google/gemini-cli),
// Pi (@mariozechner/pi-coding-agent; docs/pi.md) and, on request, Claude Code (@anthropic-ai/claude-code) and its ACP adapter
// (@zed-industries/claude-agent-acp; docs/acp.md). Each is installed with npm into its
// own directory of a cache (one per name and version), with install scripts off, and
// run later by executing the native binary its npm package ships, never the JavaScript
// wrapper and never through a shell; those that ship no native binary (Runtime "node":
// the Claude ACP adapter, Gemini CLI, Pi) run as `node <entry script>`.
package clis

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentproof/agentproof/atomicfile"
)

// CLI is one pinned agent CLI: its short name (the exec driver's suffix, or the ACP
// agent's package name), whether it has an exec:<name> driver (Exec: package agent
// runs it one process per run), the npm package and exact version, whether it is
// installed only on request (Optional), whether it is an ACP agent (ACP: driven by the
// acp: drivers only, never an exec:<cli> driver), the runtime its entry point needs
// (RuntimeNode, or "" for a native binary), and the candidate paths of its native
// binary (or entry script) below node_modules for a platform.
type CLI struct {
	Name     string
	Exec     bool
	Package  string
	Version  string
	Optional bool
	ACP      bool
	Runtime  string
	binaries func(p Platform) []string
}

// ExecNames lists the names of the pinned CLIs that have an exec:<name> driver, in
// Pinned's order (what package driver accepts after exec:).
func ExecNames() []string {
	var out []string
	for _, c := range Pinned {
		if c.Exec {
			out = append(out, c.Name)
		}
	}
	return out
}

// RuntimeNode marks a CLI whose entry point is a JavaScript file run by Node.js.
const RuntimeNode = "node"

// Spec is the npm package spec "package@version".
func (c CLI) Spec() string { return c.Package + "@" + c.Version }

// Platform is what picks a CLI's native binary: GOOS, GOARCH and (x86-64 only) whether
// the CPU has AVX2 (OpenCode ships a "baseline" build for CPUs without it).
type Platform struct {
	GOOS   string
	GOARCH string
	AVX2   bool
}

// HostPlatform is the platform agentproof runs on.
func HostPlatform() Platform {
	p := Platform{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
	if p.GOARCH == "amd64" && p.GOOS == "linux" {
		b, _ := os.ReadFile("/proc/cpuinfo")
		p.AVX2 = slices.Contains(strings.Fields(string(b)), "avx2")
	}
	return p
}

// npmOS and npmArch name a platform as npm packages do.
func npmOS(goos string) string {
	if goos == "windows" {
		return "win32"
	}
	return goos
}

func npmArch(goarch string) string {
	if goarch == "amd64" {
		return "x64"
	}
	return goarch
}

// bunBuilds names the platform packages of a CLI compiled with Bun (OpenCode, Kilo),
// base being the default build's name, in the order they are tried: the default, the
// baseline (no AVX2), musl and baseline musl builds; on an amd64 host without AVX2
// only the baseline ones.
func bunBuilds(base string, p Platform) []string {
	if p.GOARCH == "amd64" && !p.AVX2 {
		return []string{base + "-baseline", base + "-baseline-musl"}
	}
	return []string{base, base + "-baseline", base + "-musl", base + "-baseline-musl"}
}

// Pinned are the CLI versions agentproof qualifies (exact versions, never a range, so
// that a result names the binary it ran; Claude Code 2.1.197 is the newest that supports Node 20).
var Pinned = []CLI{
	{Name: "codex", Exec: true, Package: "@openai/codex", Version: "0.171.0", binaries: func(p Platform) []string {
		// vendor/<target triple>/bin/codex; the triple is globbed.
		return []string{filepath.Join("@openai", "codex-"+npmOS(p.GOOS)+"-"+npmArch(p.GOARCH), "vendor", "*", "bin", "codex")}
	}},
	{Name: "opencode", Exec: true, Package: "opencode-ai", Version: "1.18.33", binaries: func(p Platform) []string {
		var out []string
		for _, v := range bunBuilds("opencode-"+p.GOOS+"-"+npmArch(p.GOARCH), p) {
			out = append(out, filepath.Join(v, "bin", "opencode"))
		}
		return out
	}},
	{Name: "claude", Exec: true, Package: "@anthropic-ai/claude-code", Version: "2.1.197", Optional: true, binaries: func(p Platform) []string {
		return []string{filepath.Join("@anthropic-ai", "claude-code-"+p.GOOS+"-"+npmArch(p.GOARCH), "claude")}
	}},
	// ACP agents (docs/acp.md). codex-acp embeds Codex (a native Rust binary per
	// platform); claude-agent-acp 0.23.1 is the newest adapter whose package runs on
	// Node 20 (the @agentclientprotocol/claude-agent-acp successor needs Node 22) and it
	// runs the Claude Code its Agent SDK bundles (cli.js); Gemini CLI is a JS bundle.
	{Name: "codex-acp", Package: "@zed-industries/codex-acp", Version: "0.16.0", ACP: true, binaries: func(p Platform) []string {
		return []string{filepath.Join("@zed-industries", "codex-acp-"+npmOS(p.GOOS)+"-"+npmArch(p.GOARCH), "bin", "codex-acp")}
	}},
	{Name: "claude-acp", Package: "@zed-industries/claude-agent-acp", Version: "0.23.1", Optional: true, ACP: true, Runtime: RuntimeNode, binaries: func(Platform) []string {
		return []string{filepath.Join("@zed-industries", "claude-agent-acp", "dist", "index.js")}
	}},
	{Name: "gemini", Package: "@google/gemini-cli", Version: "0.61.0", ACP: true, Runtime: RuntimeNode, binaries: func(Platform) []string {
		return []string{filepath.Join("@google", "gemini-cli", "bundle", "gemini.js")}
	}},
	// More CLIs (docs/clis.md), optional: the quick start installs only the default set.
	// Kilo 7.7.7 is the newest whose platform packages are on npm (7.8.1's are not).
	{Name: "kilo", Exec: true, Package: "@kilocode/cli", Version: "7.7.7", Optional: true, binaries: func(p Platform) []string {
		var out []string
		for _, v := range bunBuilds("cli-"+p.GOOS+"-"+npmArch(p.GOARCH), p) {
			out = append(out, filepath.Join("@kilocode", v, "bin", "kilo"))
		}
		return out
	}},
	// Qwen Code declares Node 22 but 0.24.4 runs on Node 20 here.
	{Name: "qwen", Exec: true, Package: "@qwen-code/qwen-code", Version: "0.24.4", Optional: true, Runtime: RuntimeNode, binaries: func(Platform) []string {
		return []string{filepath.Join("@qwen-code", "qwen-code", "cli-entry.js")}
	}},
	{Name: "copilot", Exec: true, Package: "@github/copilot", Version: "1.0.102", Optional: true, binaries: func(p Platform) []string {
		return []string{filepath.Join("@github", "copilot-"+npmOS(p.GOOS)+"-"+npmArch(p.GOARCH), "copilot")}
	}},
	// Pi (docs/pi.md), driven in its RPC mode by the rpc:pi driver: pure JavaScript
	// (its cli.js runs on Node 20.6+; 0.73.1 is the newest on npm).
	{Name: "pi", Package: "@mariozechner/pi-coding-agent", Version: "0.73.1", Runtime: RuntimeNode, binaries: func(Platform) []string {
		return []string{filepath.Join("@mariozechner", "pi-coding-agent", "dist", "cli.js")}
	}},
}

// MinNodeMajor is the oldest Node.js major version the RuntimeNode CLIs run on.
const MinNodeMajor = 20

// Node returns the absolute path of the Node.js binary on the PATH of environ that runs
// the RuntimeNode CLIs, after checking `node --version` is at least MinNodeMajor.
// Errors name what is missing.
func Node(ctx context.Context, environ []string) (string, error) {
	p, err := lookPath("node", environ)
	if err != nil {
		return "", errors.New("node was not found on PATH; install Node.js 20 or later")
	}
	cmd := exec.CommandContext(ctx, p, "--version")
	cmd.Env = []string{}
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("running %s --version: %w", p, err)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	major, _, _ := strings.Cut(v, ".")
	if n, err := strconv.Atoi(major); err != nil || n < MinNodeMajor {
		return "", fmt.Errorf("%s is Node.js %s; the agent CLIs need %d or later", p, strings.TrimSpace(string(out)), MinNodeMajor)
	}
	return p, nil
}

// Lookup returns the pinned CLI named name.
func Lookup(name string) (CLI, bool) {
	for _, c := range Pinned {
		if c.Name == name {
			return c, true
		}
	}
	return CLI{}, false
}

// DefaultDir is the default cache directory: $XDG_CACHE_HOME/agentproof/agents (or the
// platform's user cache directory, os.UserCacheDir). It returns an error when no cache
// directory can be determined (no HOME).
func DefaultDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locating the agent CLI cache: %w (pass --dir)", err)
	}
	return filepath.Join(base, "agentproof", "agents"), nil
}

// Installed describes one installed CLI: name, npm spec, the install directory (the
// npm prefix), the absolute path of its native binary (or, with Runtime RuntimeNode,
// its JavaScript entry script), the SHA-256 (hex) that file had when it was installed
// (the pin a run's recorded binary is compared with; an install recorded before
// agentproof kept it gets it on its first Locate), and whether an existing install was
// reused.
type Installed struct {
	Name         string `json:"name"`
	Package      string `json:"package"`
	Version      string `json:"version"`
	BinarySHA256 string `json:"binarySha256,omitempty"`
	// BinaryFile is the native binary's file version the digest was computed from
	// (nil in a record written before it was kept): a heartbeat runner that opens
	// that same file version for a launch may take BinarySHA256 as its digest
	// instead of hashing the file again (a Codex binary is 300 MB); any other version
	// is hashed (api.KnownDigest).
	BinaryFile *FileIdentity `json:"binaryFile,omitempty"`
	Dir        string        `json:"dir"`
	Binary     string        `json:"binary"`
	Runtime    string        `json:"runtime,omitempty"`
	Reused     bool          `json:"reused"`
}

// markerFile, inside an install directory, records a completed install.
const markerFile = "agentproof-install.json"

// installDir is DIR/<name>-<version>.
func installDir(dir string, c CLI) string {
	return filepath.Join(dir, c.Name+"-"+c.Version)
}

// NotInstalledError is a CLI with no completed install in the cache.
type NotInstalledError struct {
	Name, Dir string
}

// Error names the install command.
func (e *NotInstalledError) Error() string {
	return fmt.Sprintf("agent CLI %s is not installed in %s (run: agentproof agents install --dir %s %s)", e.Name, e.Dir, e.Dir, e.Name)
}

// Locate returns the completed install of c in the cache dir for platform p. It returns
// a *NotInstalledError when there is none, and an error when the install's native
// binary is missing or not executable.
func Locate(dir string, c CLI, p Platform) (Installed, error) {
	d := installDir(dir, c)
	b, err := os.ReadFile(filepath.Join(d, markerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Installed{}, &NotInstalledError{Name: c.Name, Dir: dir}
	}
	if err != nil {
		return Installed{}, fmt.Errorf("reading the install record of %s: %w", c.Name, err)
	}
	var in Installed
	if err := json.Unmarshal(b, &in); err != nil || in.Version != c.Version || in.Package != c.Package {
		return Installed{}, fmt.Errorf("install record %s does not describe %s (reinstall it)", filepath.Join(d, markerFile), c.Spec())
	}
	bin, err := findBinary(d, c, p)
	if err != nil {
		return Installed{}, err
	}
	if in.BinarySHA256 == "" || in.BinaryFile == nil {
		sum, id, err := hashFile(bin)
		if err != nil {
			return Installed{}, fmt.Errorf("hashing the native binary of %s: %w", c.Name, err)
		}
		switch {
		case in.BinarySHA256 == "":
			// An install recorded before the digest was kept: pin what is there now.
			in.BinarySHA256, in.BinaryFile = sum, id
		case sum == in.BinarySHA256:
			// A record without the file version: the binary is still the pinned one.
			in.BinaryFile = id
		}
		// A binary that is no longer the one its install hashed keeps the record as
		// it is: the launch hashes it and the runtime metadata check fails it.
		_ = writeRecord(d, Installed{Name: in.Name, Package: in.Package, Version: in.Version, BinarySHA256: in.BinarySHA256, BinaryFile: in.BinaryFile})
	}
	in.Dir, in.Binary, in.Runtime = d, bin, c.Runtime
	return in, nil
}

// FileIdentity is what fstat(2) reports of one version of a file: the device and inode
// (a replaced file has another), the size in bytes and the modification and change
// times in nanoseconds (a file written in place changes its change time).
type FileIdentity struct {
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	Size    int64  `json:"size"`
	MtimeNs int64  `json:"mtimeNs"`
	CtimeNs int64  `json:"ctimeNs"`
}

// identity is f's FileIdentity.
func identity(f *os.File) (*FileIdentity, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return nil, err
	}
	return &FileIdentity{Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size, MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano()}, nil
}

// hashFile is the SHA-256 (lower-case hex) of the file at path and the file version it
// is the digest of. Error: the file changed while it was hashed.
func hashFile(path string) (string, *FileIdentity, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	before, err := identity(f)
	if err != nil {
		return "", nil, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", nil, err
	}
	after, err := identity(f)
	if err != nil {
		return "", nil, err
	}
	if *before != *after {
		return "", nil, fmt.Errorf("%s changed while it was hashed", path)
	}
	return hex.EncodeToString(h.Sum(nil)), before, nil
}

// writeRecord writes an install record into dir (atomically, not synced: dir is the
// install's private directory, renamed into place afterwards).
func writeRecord(dir string, in Installed) error {
	b, _ := json.MarshalIndent(in, "", "  ")
	return atomicfile.WriteFile(filepath.Join(dir, markerFile), append(b, '\n'), 0o644, atomicfile.NoSync())
}

// findBinary finds c's native binary below prefix/node_modules.
func findBinary(prefix string, c CLI, p Platform) (string, error) {
	nm := filepath.Join(prefix, "node_modules")
	var tried []string
	for _, pattern := range c.binaries(p) {
		matches, _ := filepath.Glob(filepath.Join(nm, pattern))
		slices.Sort(matches)
		for _, m := range matches {
			if st, err := os.Stat(m); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
				abs, err := filepath.Abs(m)
				if err != nil {
					return "", err
				}
				return abs, nil
			}
		}
		tried = append(tried, filepath.Join(nm, pattern))
	}
	return "", fmt.Errorf("%s: no native binary for %s/%s in its npm install (looked for %s)", c.Spec(), p.GOOS, p.GOARCH, strings.Join(tried, ", "))
}

// NPMError is npm missing or failing; Command is the npm command line to run by hand.
type NPMError struct {
	Command string
	Err     error
	Output  string
}

// Error names the npm command and the cause.
func (e *NPMError) Error() string {
	msg := fmt.Sprintf("installing an agent CLI needs npm (%s): %v", e.Command, e.Err)
	if e.Output != "" {
		msg += "\n" + e.Output
	}
	return msg
}

// Unwrap returns the cause.
func (e *NPMError) Unwrap() error { return e.Err }

// Options configure Install: the cache directory (Dir, required, made absolute), the
// npm program (NPM: a path, or "" to look "npm" up on PATH), where progress lines go,
// the platform, and the environment npm runs with (Env, nil = NPMEnv(os.Environ())).
type Options struct {
	Dir      string
	NPM      string
	Progress io.Writer
	Platform Platform
	Env      []string
}

// NPMEnv keeps from environ only what npm needs: PATH (to find node), HOME and the
// temporary directory (npm's cache), locale, npm_config_* settings, proxy variables
// and CA bundle settings (the registry may be reachable only through a proxy or a
// TLS-inspecting gateway).
func NPMEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		lk := strings.ToLower(k)
		switch {
		case k == "PATH" || k == "HOME" || k == "TMPDIR" || k == "LANG" || k == "USER" || k == "SYSTEMROOT":
		case strings.HasPrefix(lk, "npm_config_"):
		case lk == "http_proxy" || lk == "https_proxy" || lk == "no_proxy":
		case k == "NODE_EXTRA_CA_CERTS" || k == "SSL_CERT_FILE" || k == "SSL_CERT_DIR":
		default:
			continue
		}
		out = append(out, kv)
	}
	return out
}

// Install installs each CLI of cs into opts.Dir unless a completed install is there
// already (then it is reused): `npm install --prefix DIR/<name>-<version>.tmp-…
// --ignore-scripts --no-audit --no-fund PACKAGE@VERSION`, then the native binary is
// located, an install record written and the directory renamed into place, so an
// interrupted install never looks complete. Progress lines go to opts.Progress. It
// returns the installs in the order of cs and an *NPMError naming the npm command when
// npm is missing or fails.
func Install(ctx context.Context, cs []CLI, opts Options) ([]Installed, error) {
	if opts.Dir == "" {
		return nil, errors.New("installing agent CLIs: no cache directory")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("installing agent CLIs: %w", err)
	}
	if opts.Platform.GOOS == "" {
		opts.Platform = HostPlatform()
	}
	if opts.Env == nil {
		opts.Env = NPMEnv(os.Environ())
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	var out []Installed
	for _, c := range cs {
		if in, err := Locate(dir, c, opts.Platform); err == nil {
			in.Reused = true
			fmt.Fprintf(progress, "%s %s already installed: %s\n", c.Name, c.Version, in.Binary)
			out = append(out, in)
			continue
		}
		in, err := installOne(ctx, dir, c, opts, progress)
		if err != nil {
			return out, err
		}
		out = append(out, in)
	}
	return out, nil
}

func installOne(ctx context.Context, dir string, c CLI, opts Options, progress io.Writer) (Installed, error) {
	final := installDir(dir, c)
	args := []string{"install", "--prefix", final, "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error", c.Spec()}
	display := "npm " + strings.Join(args, " ")
	npm := opts.NPM
	if npm == "" {
		p, err := lookPath("npm", opts.Env)
		if err != nil {
			return Installed{}, &NPMError{Command: display, Err: errors.New("npm was not found on PATH; install Node.js 20 or later (it ships npm)")}
		}
		npm = p
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Installed{}, fmt.Errorf("installing %s: %w", c.Name, err)
	}
	tmp, err := os.MkdirTemp(dir, "."+c.Name+"-"+c.Version+".tmp-")
	if err != nil {
		return Installed{}, fmt.Errorf("installing %s: %w", c.Name, err)
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(progress, "installing %s (%s) with npm into %s …\n", c.Name, c.Spec(), final)
	start := time.Now()
	args[2] = tmp
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Env = opts.Env
	cmd.Dir = dir
	var outBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outBuf, &outBuf
	if err := cmd.Run(); err != nil {
		return Installed{}, &NPMError{Command: display, Err: err, Output: tail(outBuf.String(), 2000)}
	}
	bin, err := findBinary(tmp, c, opts.Platform)
	if err != nil {
		return Installed{}, err
	}
	sum, id, err := hashFile(bin)
	if err != nil {
		return Installed{}, fmt.Errorf("installing %s: hashing its native binary: %w", c.Name, err)
	}
	if err := writeRecord(tmp, Installed{Name: c.Name, Package: c.Package, Version: c.Version, BinarySHA256: sum, BinaryFile: id}); err != nil {
		return Installed{}, fmt.Errorf("installing %s: %w", c.Name, err)
	}
	// A stale, incomplete directory (no record) is replaced.
	if err := os.RemoveAll(final); err != nil {
		return Installed{}, fmt.Errorf("installing %s: %w", c.Name, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return Installed{}, fmt.Errorf("installing %s: %w", c.Name, err)
	}
	in, err := Locate(dir, c, opts.Platform)
	if err != nil {
		return Installed{}, err
	}
	fmt.Fprintf(progress, "installed %s %s in %.1fs: %s\n", c.Name, c.Version, time.Since(start).Seconds(), in.Binary)
	return in, nil
}

// lookPath finds prog on the PATH of env (not the parent's).
func lookPath(prog string, env []string) (string, error) {
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			continue
		}
		p := filepath.Join(d, prog)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
