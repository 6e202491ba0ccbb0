package container

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"
)

// EngineName names a container engine whose CLI the provider drives.
type EngineName string

// The engines the provider knows, in the order it looks for them.
const (
	// EnginePodman is podman (daemonless): the provider's first choice.
	EnginePodman EngineName = "podman"
	// EngineDocker is docker (its daemon must run): the provider's engine where podman
	// is not installed. Its CLI passes no descriptor into a container, so a docker
	// launch's init reports its exit over a unix socket (see Launch).
	EngineDocker EngineName = "docker"
)

// Engine is one container engine's CLI on this machine.
//
//   - Path: the CLI's absolute path.
//   - Runtime: the OCI runtime podman is told to use (an absolute path of runc: crun
//     refuses a hybrid cgroup v1 layout), "" for the engine's default.
type Engine struct {
	Name    EngineName
	Path    string
	Runtime string
}

// FindEngine returns the first engine on PATH (podman, then docker) with podman's
// runtime set to runc when runc is installed; false when there is none.
func FindEngine() (Engine, bool) {
	if p, err := exec.LookPath("podman"); err == nil {
		e := Engine{Name: EnginePodman, Path: p}
		if r, err := exec.LookPath("runc"); err == nil {
			e.Runtime = r
		}
		return e, true
	}
	if p, err := exec.LookPath("docker"); err == nil {
		return Engine{Name: EngineDocker, Path: p}, true
	}
	return Engine{}, false
}

// args returns the CLI's global flags followed by args.
func (e Engine) args(args ...string) []string {
	var out []string
	if e.Name == EnginePodman && e.Runtime != "" {
		out = append(out, "--runtime", e.Runtime)
	}
	return append(out, args...)
}

// engineTimeout bounds one engine command that is not a container's run.
const engineTimeout = 2 * time.Minute

// run runs the engine with args and returns its standard output, trimmed. The error
// names the command and carries its standard error.
func (e Engine) run(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, engineTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.Path, e.args(args...)...)
	cmd.Env = engineEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if len(msg) > 600 {
			msg = msg[:600] + "…"
		}
		return strings.TrimSpace(out.String()), &EngineError{Args: args, Err: err, Stderr: msg}
	}
	return strings.TrimSpace(out.String()), nil
}

// EngineError is a failed engine command: its arguments (after the global flags), the
// process error and what it said on standard error.
type EngineError struct {
	Args   []string
	Err    error
	Stderr string
}

func (e *EngineError) Error() string {
	verb := ""
	if len(e.Args) > 0 {
		verb = e.Args[0]
	}
	return fmt.Sprintf("%s: %v: %s", verb, e.Err, e.Stderr)
}

func (e *EngineError) Unwrap() error { return e.Err }

// exitCode is the engine command's exit code, -1 when it did not exit.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// engineEnv is the explicit environment of every engine command: a PATH where the
// engine finds conmon and its runtime, and HOME, XDG_RUNTIME_DIR and TMPDIR of this
// process (a rootless engine keeps its storage under HOME).
func engineEnv() []string {
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	for _, k := range []string{"HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "TMPDIR", "USER", "LOGNAME"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

var versionCache sync.Map // engine path → version string

// Version returns the engine's version ("4.3.1"), run once per engine path: podman's
// own, docker's daemon's (docker's CLI answers it only when the daemon runs). Errors:
// the engine, or docker's daemon, does not answer.
func (e Engine) Version(ctx context.Context) (string, error) {
	if v, ok := versionCache.Load(e.Path); ok {
		return v.(string), nil
	}
	format := "{{.Client.Version}}"
	if e.Name == EngineDocker {
		format = "{{.Server.Version}}"
	}
	out, err := e.run(ctx, "version", "--format", format)
	if err != nil {
		return "", err
	}
	versionCache.Store(e.Path, out)
	return out, nil
}

// String is "podman 4.3.1 (runtime /usr/sbin/runc)" without the version.
func (e Engine) String() string {
	s := string(e.Name) + " " + e.Path
	if e.Runtime != "" {
		s += " (runtime " + e.Runtime + ")"
	}
	return s
}

var containerNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^apf-[0-9a-f]{16}-[0-9]+$`) })
