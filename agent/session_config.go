package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/redact"
	"github.com/agentproof/agentproof/worker"
)

// sessionSettings are the driverConfig settings every session driver reads (acp:<agent>
// and rpc:pi): the agent's Binary and Node (absolute paths; for a JavaScript agent
// Binary is its entry script), the scripted model's loopback root URL (ModelBaseURL,
// without a trailing slash) and the turn, start and cancel bounds (TurnTimeoutMs,
// StartTimeoutMs, CancelGraceMs). ACPDriver and PiDriver embed them.
type sessionSettings struct {
	binary       string
	node         string
	modelURL     string
	turnTimeout  time.Duration
	startTimeout time.Duration
	cancelGrace  time.Duration
}

// defaultSessionSettings are the bounds a session driver has when driverConfig sets
// none (DefaultACPTurnTimeout, DefaultACPStartTimeout, DefaultACPCancelGrace).
func defaultSessionSettings() sessionSettings {
	return sessionSettings{turnTimeout: DefaultACPTurnTimeout, startTimeout: DefaultACPStartTimeout, cancelGrace: DefaultACPCancelGrace}
}

// parse reads the session settings and the model script of config into s, appending
// every problem to ce: a bound that is not a positive whole number of milliseconds, a
// path that is not absolute, a model URL that is not loopback http, a script other
// than oracle, nop or wrong.
func (s *sessionSettings) parse(config api.DriverConfig, ce *ConfigError) {
	for _, f := range []struct {
		key string
		v   *int64
		dst *time.Duration
	}{{ACPKeyTurnTimeout, config.TurnTimeoutMs, &s.turnTimeout}, {ACPKeyStartTimeout, config.StartTimeoutMs, &s.startTimeout}, {ACPKeyCancelGrace, config.CancelGraceMs, &s.cancelGrace}} {
		if f.v == nil {
			continue
		}
		if *f.v <= 0 || *f.v >= 1<<62/int64(time.Millisecond) {
			ce.Problems = append(ce.Problems, fmt.Sprintf("%s %d must be a positive whole number of milliseconds", f.key, *f.v))
			continue
		}
		*f.dst = time.Duration(*f.v) * time.Millisecond
	}
	for _, f := range []struct {
		key, v string
		dst    *string
	}{{CLIKeyBinary, config.Binary, &s.binary}, {ACPKeyNode, config.Node, &s.node}} {
		if f.v == "" {
			continue
		}
		if !filepath.IsAbs(f.v) || strings.ContainsRune(f.v, 0) {
			ce.Problems = append(ce.Problems, fmt.Sprintf("%s %s must be an absolute path", f.key, f.v))
		}
		*f.dst = f.v
	}
	if u := config.ModelBaseURL; u != "" {
		if !strings.HasPrefix(u, "http://127.0.0.1:") && !strings.HasPrefix(u, "http://[::1]:") && !strings.HasPrefix(u, "http://localhost:") {
			ce.Problems = append(ce.Problems, fmt.Sprintf("modelBaseUrl %s must be a loopback http URL (the scripted model)", u))
		}
		s.modelURL = strings.TrimRight(u, "/")
	}
	if v := config.Script; v != "" && v != ScriptOracle && v != ScriptNop && v != ScriptWrong && v != ScriptUndo {
		ce.Problems = append(ce.Problems, fmt.Sprintf("script %s is not %s, %s, %s or %s", v, ScriptOracle, ScriptNop, ScriptWrong, ScriptUndo))
	}
}

// SessionEnv is what a session driver's Start needs besides its configuration:
//
//   - Run: the run that starts the session (RunEnv: executable, workspace, API URL, run
//     id and token, state directory, resolved secrets, adapter configuration). The
//     agent's MCP server acts for this run (a warm session's for the run bound now).
//   - Permissions and Questions: the human's side (session.PermissionDecider,
//     session.QuestionDecider). Permissions is required of a protocol whose agent asks
//     (ACP; Pi with its write gate on); Questions of a protocol with native questions
//     (Pi).
//   - Tools: the semantic tools a protocol registers in the agent itself (Pi's
//     extension proxies them to `agentproof mcp`; package mcp's Tools).
//   - Log, Redact, Now, ExtraMarkers: as session.Env's.
//   - Warm: the session will serve several runs (lifecycle warm): its MCP server reads
//     the current run from the session's run binding file (session.EnvRunBinding)
//     where the protocol starts one, which Session.Bind rewrites per turn.
//   - Place: places the process somewhere other than directly on the host (a sandbox
//     lease, docs/acp.md "Under a sandbox"), for a driver that is Confinable; nil on
//     the host.
type SessionEnv struct {
	Run          RunEnv
	Permissions  session.PermissionDecider
	Questions    session.QuestionDecider
	Tools        []PiTool
	Log          io.Writer
	Redact       *redact.Set
	Now          func() time.Time
	ExtraMarkers []string
	Warm         bool
	Place        session.LaunchFunc
}

// SessionDriver starts the sessions of one protocol-driven agent (acp:<agent>,
// rpc:pi, app:codex). Implementations are immutable and safe for concurrent use.
type SessionDriver interface {
	// Name is the driver's name ("acp:codex", "rpc:pi").
	Name() string
	// Protocol describes the driver's protocol (session.Protocol).
	Protocol() session.Protocol
	// Start launches the agent in env.Run's workspace and opens its session. Errors: a
	// *session.StartError naming the stage; the process is gone.
	Start(ctx context.Context, env SessionEnv) (*session.Session, error)
	// Confinable reports whether the agent's process can run inside a sandbox lease
	// (SessionEnv.Place).
	Confinable() bool
}

// NewSession returns the session driver name (kind driver.KindACP, driver.KindRPC or
// driver.KindApp) configured by config, as NewACP, NewPi and NewCodexApp do. Errors: a
// *ConfigError.
func NewSession(name driver.Name, config api.DriverConfig) (SessionDriver, error) {
	switch name.Kind {
	case driver.KindACP:
		return NewACP(name, config)
	case driver.KindRPC:
		return NewPi(config)
	case driver.KindApp:
		if name.Arg == driver.AppClaude {
			return NewClaudeApp(config)
		}
		return NewCodexApp(config)
	}
	return nil, &ConfigError{Driver: name.String(), Problems: []string{"not a session driver (acp:<agent>, rpc:pi, app:codex, app:claude)"}}
}

// env is the session.Env of a session started for env: the run's token and secrets
// redacted, the settings' bounds.
func (s *sessionSettings) env(env SessionEnv) session.Env {
	secrets := make([]string, 0, len(env.Run.Secrets))
	for _, k := range slices.Sorted(maps.Keys(env.Run.Secrets)) {
		secrets = append(secrets, env.Run.Secrets[k])
	}
	return session.Env{RunID: env.Run.RunID, RunToken: env.Run.RunToken, Secrets: secrets, Permissions: env.Permissions,
		Questions: env.Questions, Log: env.Log, Redact: env.Redact, Now: env.Now, ExtraMarkers: env.ExtraMarkers, Place: env.Place,
		Bounds: session.Bounds{Turn: s.turnTimeout, Start: s.startTimeout, CancelGrace: s.cancelGrace}}
}

// sessionLaunch plans the private directories of session n of a real agent in the
// sessions directory (acp-sessions, pi-sessions) below env's state directory: the
// session's directory, its HOME (home/), TMPDIR (tmp/) and XDG directories, and the
// process spec's bounds and working directory (the workspace). vars are the
// variables every real agent gets (HOME, LANG, PATH, TZ, TERM, NO_COLOR, XDG_*,
// TMPDIR); the caller adds its own before sessionEnviron.
func (b bounds) sessionLaunch(env RunEnv, sessions string, n int) (l session.Launch, home string, vars map[string]string) {
	dir := filepath.Join(env.StateDir, sessions, strconv.Itoa(n))
	home = filepath.Join(dir, "home")
	xdg := func(k string) string { return filepath.Join(dir, "xdg", k) }
	l = session.Launch{Index: n, Dir: dir, Files: map[string][]byte{}, CloseGrace: session.CloseGrace,
		Dirs: []string{home, filepath.Join(dir, "tmp"), xdg("config"), xdg("data"), xdg("cache"), xdg("state")},
		Spec: worker.Spec{Dir: env.Workspace, Timeout: b.timeout, MaxOutputBytes: b.maxOutput}}
	vars = map[string]string{"HOME": home, "LANG": "C.UTF-8", "PATH": cliPath, "TZ": "UTC", "TERM": "dumb", "NO_COLOR": "1",
		"XDG_CONFIG_HOME": xdg("config"), "XDG_DATA_HOME": xdg("data"), "XDG_CACHE_HOME": xdg("cache"), "XDG_STATE_HOME": xdg("state"),
		"TMPDIR": filepath.Join(dir, "tmp")}
	return l, home, vars
}

// sessionEnviron is a session process's environment: vars and the run's resolved
// secrets, as sorted KEY=VALUE. Errors: a secret name that is not a usable variable
// name, or one the runner sets itself.
func sessionEnviron(vars, secrets map[string]string) ([]string, error) {
	all := maps.Clone(vars)
	for name, v := range secrets {
		if !envNameRE().MatchString(name) || strings.HasPrefix(name, "AGENTPROOF_") {
			return nil, fmt.Errorf("agent: secret name %q is not usable in an agent's environment", name)
		}
		if _, taken := all[name]; taken {
			return nil, fmt.Errorf("agent: secret name %q collides with a variable the runner sets", name)
		}
		all[name] = v
	}
	out := make([]string, 0, len(all))
	for _, k := range slices.Sorted(maps.Keys(all)) {
		out = append(out, k+"="+all[k])
	}
	return out, nil
}

// modelID is the model a session driver asks its agent for: config's model, or def
// when it names none. A model that is not an id (more than 200 characters, a space,
// quote, backslash or control character) is a problem of ce.
func modelID(config api.DriverConfig, def string, ce *ConfigError) string {
	s := config.Model
	if s == "" {
		return def
	}
	if len(s) > 200 || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '"' || r == '\\' }) {
		ce.Problems = append(ce.Problems, fmt.Sprintf("model %s must be a model id (at most 200 characters, no spaces, quotes or control characters)", s))
	}
	return s
}

// askingSession begins the start of a session whose agent asks permissions
// (app:codex, app:claude): env must have a permission decider; it returns the agent's
// next session index in the sessions directory below its state directory. Errors: a
// launch error of protocol (launchError).
func askingSession(protocol string, env SessionEnv, sessions string) (int, error) {
	if env.Permissions == nil {
		return 0, launchError(protocol, errors.New("no permission decider"))
	}
	n, err := nextSessionIndex(env.Run.StateDir, sessions)
	if err != nil {
		return 0, launchError(protocol, fmt.Errorf("reading the agent's sessions: %w", err))
	}
	return n, nil
}

// launchError is a *session.StartError of protocol at stage launch (nothing started).
func launchError(protocol string, err error) error {
	return &session.StartError{Protocol: protocol, Stage: session.StageLaunch, Err: err}
}

// requireLaunch checks what the launch of a pinned CLI's session against the scripted
// model needs: a run with an API and the agentproof executable (requireRun,
// requireExecutable), the CLI's binary (installed as `agentproof agents install pkg`)
// and the scripted model's URL. Errors name driver name and what is missing.
func (s *sessionSettings) requireLaunch(env RunEnv, name, pkg string) error {
	if err := requireRun(env, true); err != nil {
		return err
	}
	if err := requireExecutable(env); err != nil {
		return err
	}
	if s.binary == "" {
		return fmt.Errorf("agent: %s: no binary configured (driverConfig binary; `agentproof agents install %s`)", name, pkg)
	}
	if s.modelURL == "" {
		return fmt.Errorf("agent: %s: no model endpoint: driverConfig needs modelBaseUrl (the scripted model)", name)
	}
	return nil
}
