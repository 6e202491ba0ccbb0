// Package agent owns the agent drivers: a Driver turns a
// profile's driver configuration, a run's context and what the runner knows about the
// run (RunEnv) into a worker.Spec — an absolute program path, the complete argv, the
// complete environment, the working directory, a timeout and an output budget — for
// worker.Supervise, and after the exit turns the worker.Outcome into a Report: the
// termination summary, the run status to record when the agent left its run open,
// usage (the real-CLI drivers read it from the CLI's event stream) and transcript
// evidence.
//
// Drivers: fixture:<pass|fail|hang|noisy>, reference,
// wrong, leaky and nop (the built-in agents, `agentproof agent <name>`, see RunBuiltin
// and package reference), exec (bring your own agent: a command and arguments from the
// profile) and exec:codex, exec:opencode, exec:claude (the pinned real agent CLIs, see
// cli.go). No driver inherits the parent's environment or uses a shell.
package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/worker"
)

// Environment variables the runner gives an agent process (built-in and exec agents;
// fixture programs get exactly worker.ChildEnvironment()).
const (
	// EnvAPIURL is the base URL of the control plane's agent API.
	EnvAPIURL = "AGENTPROOF_API_URL"
	// EnvRunToken is the run token that authenticates the agent for its run.
	EnvRunToken = "AGENTPROOF_RUN_TOKEN"
	// EnvRunID is the id of the run the process carries out.
	EnvRunID = "AGENTPROOF_RUN_ID"
	// EnvWorkspace is the absolute workspace directory (also the working directory).
	EnvWorkspace = "AGENTPROOF_WORKSPACE"
	// EnvStateDir is the agent's private directory that outlives its runs (also HOME).
	EnvStateDir = "AGENTPROOF_AGENT_STATE_DIR"
	// EnvConfig holds a built-in agent's configuration as JSON (BuiltinConfig).
	EnvConfig = "AGENTPROOF_AGENT_CONFIG"
	// EnvHostileServerHome is the control plane's instance home on the host, given only
	// to the hostile suite's agents (driver hostile:<attack>) as what they aim at.
	EnvHostileServerHome = "AGENTPROOF_HOSTILE_SERVER_HOME"
	// EnvAgentHome is the agent's registered home directory (RunEnv.AgentHome), edited
	// with ordinary filesystem tools and saved by the runner after every run.
	EnvAgentHome = "AGENT_HOME"
)

// Defaults of a driver configuration that sets no bound.
const (
	// DefaultTimeout bounds one agent process (one run) when driverConfig has no timeoutMs.
	DefaultTimeout = 10 * time.Minute
	// DefaultMaxOutputBytes bounds one process's stdout+stderr (bytes) when driverConfig
	// has no maxOutputBytes.
	DefaultMaxOutputBytes = 1 << 20
	// DefaultFixtureTimeout bounds a fixture program whose driverConfig has no timeoutMs
	// (a fixture's lifetime must stay within worker.MaxChildLifetimeMS).
	DefaultFixtureTimeout = time.Minute
)

// RunEnv is what the runner knows about one run when it launches the agent:
//
//   - Executable: absolute path of the agentproof binary (os.Executable()); the fixture
//     and built-in drivers run it.
//   - Workspace: absolute path of the run's workspace (the process's working directory).
//   - APIURL, RunID, RunToken: how the agent reaches the agent API for this run. The
//     token is placed only in the environment, never in argv.
//   - StateDir: absolute path of the agent's private directory that outlives its runs
//     (its HOME; the reference agent keeps its session there).
//   - Secrets: resolved secret environment, variable name → value. Values exist only
//     here and in the child's environment; they are never logged.
//   - AdapterConfig: the agent's adapter configuration as the harness created it; the
//     reference and wrong agents read a BuiltinConfig from it.
//   - ServerHome: the control plane's instance home on the host; only the hostile
//     suite's agents get it (EnvHostileServerHome), as the target of their attack.
type RunEnv struct {
	Executable    string
	Workspace     string
	APIURL        string
	RunID         string
	RunToken      string
	StateDir      string
	Secrets       map[string]string
	AdapterConfig json.RawMessage
	ServerHome    string
	// AgentHome is the agent's registered home directory (absolute; "" for none): the
	// runner materialises it from the control plane's managed files before the launch
	// and saves it after; the agent gets it as EnvAgentHome.
	AgentHome string
	// Home is the HOME to launch with instead of the state directory (absolute; "" for
	// the state directory): the company-scoped HOME a login file was seeded into
	// (api.AdapterConfig.LoginHome; docs/secrets.md "Login files"). The exec and
	// built-in drivers read it (their HOME); the runner sets it for exec agents only.
	Home string
}

// Driver launches one kind of agent. Implementations are immutable and safe for
// concurrent use.
type Driver interface {
	// Name is the profile's driver, for example "fixture:hang" or "exec".
	Name() string
	// Launch returns the process spec of one run. It fails (without side effects) when
	// env lacks what the driver needs, a template does not render, or a secret name is
	// not a valid environment variable name or collides with a runner variable.
	Launch(rc controlplane.RunContext, env RunEnv) (worker.Spec, error)
	// Report describes a finished process (see Report).
	Report(o worker.Outcome) Report
}

// Report is what a driver makes of a finished agent process:
//
//   - Summary: the termination summary (how the process ended), one line.
//   - RunStatus: how the runner completes the run when the process left it open:
//     "succeeded" for a fixture program that exited 0 in time (fixtures never talk to
//     the API: their exit is the whole story) and for a real CLI that exited 0 (a CLI
//     never completes its run itself: it works through the MCP tools, and the matchers
//     judge what it did), otherwise "failed".
//   - Usage: the usage the agent reported, as JSON for billing.ExtractLLM; nil when it
//     reported none (read as unavailable, never as zero cost). Only the real-CLI
//     drivers report usage (from the CLI's JSON event stream).
//   - Transcript: evidence to store — the kept stdout and stderr.
//   - Presentation: the comment the run presented as its user-facing message, when the
//     runner completes the run; nil for none. The runner
//     fills it for the real-CLI drivers from the MCP server's record.
//   - EventStreamComplete: for a driver whose agent reports through an event stream
//     (the real CLIs), whether the stream carried its terminal event (TerminalEvent);
//     false means the agent did not finish cleanly, whatever its exit code. nil for
//     drivers without an event stream.
//   - LeftOpen: when the runner has to complete a run the agent left open, the detail
//     it puts before the run's summary and the termination summary ("" for none): the
//     exec driver says that an agent which exited 0 did not complete its run, and what
//     it must call (ExecLeftOpen).
type Report struct {
	Summary             string
	RunStatus           controlplane.RunStatus
	Usage               json.RawMessage
	Transcript          []Evidence
	Presentation        *Presentation
	EventStreamComplete *bool
	LeftOpen            string
}

// Presentation names a run's presented comment: CommentID (what the run result's
// presentationDecision.commentId must name) and its Text.
type Presentation struct {
	CommentID string
	Text      string
}

// Evidence is one piece of transcript evidence: a file name, a media type and the bytes.
type Evidence struct {
	Name      string
	MediaType string
	Body      []byte
}

// ConfigError lists every problem of a driver name or configuration.
type ConfigError struct {
	Driver   string
	Problems []string
}

// Error renders "agent: driver <name>: <problems; …>".
func (e *ConfigError) Error() string {
	return fmt.Sprintf("agent: driver %s: %s", e.Driver, strings.Join(e.Problems, "; "))
}

// New returns the driver name (a catalog profile's driver, parsed by driver.Parse)
// configured by config (the profile's driverConfig). Every driver reads TimeoutMs (> 0,
// ms) and MaxOutputBytes (1..worker.MaxOutputBytes, bytes); wrong also reads Strategy
// ("wrong_nonce", the default); exec reads Command (absolute path), Args (templates, see
// ExecVars) and Env (secret references, resolved by the server into RunEnv.Secrets);
// exec:codex, exec:opencode and exec:claude read Binary, ModelBaseURL, Live, Script,
// ResultGraceMs and Model.
// A key the driver does not read, a value out of range and the zero Name are a
// *ConfigError listing every problem.
func New(name driver.Name, config api.DriverConfig) (Driver, error) {
	ce := &ConfigError{Driver: name.String()}
	var d Driver
	switch name.Kind {
	case driver.KindFixture:
		b := parseBounds(config, name, ce, nil)
		if config.TimeoutMs == nil {
			b.timeout = DefaultFixtureTimeout
		}
		if b.timeout > time.Duration(worker.MaxTimeoutMS)*time.Millisecond {
			ce.Problems = append(ce.Problems, fmt.Sprintf("timeoutMs must be at most %d for a fixture program", worker.MaxTimeoutMS))
		}
		d = fixtureDriver{fixture: name.Arg, bounds: b}
	case driver.KindReference, driver.KindNop, driver.KindLeaky, driver.KindHostile:
		d = builtinDriver{name: name, bounds: parseBounds(config, name, ce, nil)}
	case driver.KindWrong:
		b := parseBounds(config, name, ce, []string{"strategy"})
		if config.Strategy != "" && config.Strategy != "wrong_nonce" {
			ce.Problems = append(ce.Problems, fmt.Sprintf("strategy %q is not wrong_nonce", config.Strategy))
		}
		d = builtinDriver{name: name, bounds: b}
	case driver.KindExec:
		d = newExec(config, name, ce)
	case driver.KindCLI:
		d = newCLI(name, config, ce)
	case driver.KindACP:
		ce.Problems = append(ce.Problems, "an ACP driver runs as a session, not one process per run: build it with NewACP")
	case driver.KindRPC:
		ce.Problems = append(ce.Problems, "a session driver: one process serves every turn; build it with agent.NewPi (docs/pi.md), not agent.New")
	case driver.KindApp:
		ce.Problems = append(ce.Problems, "a session driver: one process serves every turn; build it with agent.NewSession, not agent.New")
	default:
		ce.Problems = append(ce.Problems, "no driver (one of "+strings.Join(driver.Names(), ", ")+")")
	}
	if len(ce.Problems) > 0 {
		return nil, ce
	}
	return d, nil
}

// bounds are a driver's process bounds.
type bounds struct {
	timeout   time.Duration
	maxOutput int64
}

// parseBounds reads TimeoutMs and MaxOutputBytes from config and reports every other
// key that is set but not in reads (the keys the driver reads besides its bounds).
func parseBounds(config api.DriverConfig, name driver.Name, ce *ConfigError, reads []string) bounds {
	b := bounds{timeout: DefaultTimeout, maxOutput: DefaultMaxOutputBytes}
	if n := config.TimeoutMs; n != nil {
		if *n > 0 && *n < 1<<62/int64(time.Millisecond) {
			b.timeout = time.Duration(*n) * time.Millisecond
		} else {
			ce.Problems = append(ce.Problems, fmt.Sprintf("timeoutMs %d must be a positive whole number of milliseconds", *n))
		}
	}
	if n := config.MaxOutputBytes; n != nil {
		if *n > 0 && *n <= worker.MaxOutputBytes {
			b.maxOutput = *n
		} else {
			ce.Problems = append(ce.Problems, fmt.Sprintf("maxOutputBytes %d must be a whole number of bytes in 1..%d", *n, worker.MaxOutputBytes))
		}
	}
	for _, key := range setKeys(config) {
		if key != "timeoutMs" && key != "maxOutputBytes" && !slices.Contains(reads, key) {
			ce.Problems = append(ce.Problems, fmt.Sprintf("driverConfig %s does not apply to driver %s", key, name))
		}
	}
	return b
}

// setKeys returns the JSON keys of config that are set (non-zero), sorted.
func setKeys(config api.DriverConfig) []string {
	b, _ := json.Marshal(config) // every field is omitempty: the keys present are the set ones
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	return slices.Sorted(maps.Keys(m))
}

// envNameRE is the grammar of an environment variable name a secret may take.
var envNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// baseEnv is the environment every built-in and exec agent starts from: a fixed PATH,
// locale and time zone, HOME = the agent's state directory (or RunEnv.Home).
func baseEnv(env RunEnv) []string {
	home := env.StateDir
	if env.Home != "" {
		home = env.Home
	}
	return []string{"HOME=" + home, "LANG=C", "PATH=/usr/bin:/bin", "TZ=UTC"}
}

// apiEnv is baseEnv plus the run's identity, token and resolved secrets, sorted by name.
// Secret names must be valid and must not shadow a runner variable.
func apiEnv(env RunEnv, extra ...string) ([]string, error) {
	out := append(baseEnv(env),
		EnvAPIURL+"="+env.APIURL, EnvRunToken+"="+env.RunToken, EnvRunID+"="+env.RunID,
		EnvWorkspace+"="+env.Workspace, EnvStateDir+"="+env.StateDir)
	if env.AgentHome != "" {
		out = append(out, EnvAgentHome+"="+env.AgentHome)
	}
	out = append(out, extra...)
	taken := map[string]bool{}
	for _, kv := range out {
		k, _, _ := strings.Cut(kv, "=")
		taken[k] = true
	}
	var bad []string
	for _, name := range slices.Sorted(maps.Keys(env.Secrets)) {
		switch {
		case !envNameRE().MatchString(name):
			bad = append(bad, fmt.Sprintf("secret name %q is not an environment variable name", name))
		case taken[name] || strings.HasPrefix(name, "AGENTPROOF_"):
			bad = append(bad, fmt.Sprintf("secret name %q collides with a variable the runner sets", name))
		default:
			out = append(out, name+"="+env.Secrets[name])
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("agent: %s", strings.Join(bad, "; "))
	}
	slices.Sort(out)
	return out, nil
}

// requireRun checks the RunEnv fields every launch needs, and those named in api.
func requireRun(env RunEnv, api bool) error {
	var p []string
	abs := func(name, v string) {
		if !strings.HasPrefix(v, "/") {
			p = append(p, fmt.Sprintf("%s %q must be an absolute path", name, v))
		}
	}
	abs("workspace", env.Workspace)
	if env.Home != "" {
		abs("HOME", env.Home)
	}
	if api {
		abs("state directory", env.StateDir)
		if env.APIURL == "" || env.RunID == "" || env.RunToken == "" {
			p = append(p, "the API URL, run id and run token are required")
		}
	}
	if len(p) > 0 {
		return fmt.Errorf("agent: cannot launch: %s", strings.Join(p, "; "))
	}
	return nil
}

// Summarize is the termination summary of a process outcome, for example "exited with
// code 0 after 1.2s" or "timed out after 2s; sent SIGTERM, SIGKILL; killed by SIGKILL".
func Summarize(o worker.Outcome) string {
	if !o.Started {
		switch {
		case o.SpawnError != nil:
			return "not started: " + o.SpawnError.Error()
		case o.Aborted:
			return "not started: aborted before the spawn"
		}
		return "not started"
	}
	var parts []string
	switch {
	case o.TimedOut:
		parts = append(parts, "timed out after "+o.Duration.Round(time.Millisecond).String())
	case o.OutputExceeded:
		parts = append(parts, fmt.Sprintf("output exceeded its budget (%d bytes received)", o.OutputBytes))
	case o.Aborted:
		parts = append(parts, "stopped by the runner")
	case o.StoppedAfterResult:
		parts = append(parts, "stopped after its result (it did not exit within the result grace)")
	}
	if len(o.SignalsSent) > 0 {
		parts = append(parts, "sent "+strings.Join(o.SignalsSent, ", "))
	}
	switch {
	case o.ExitCode != nil:
		parts = append(parts, fmt.Sprintf("exited with code %d after %s", *o.ExitCode, o.Duration.Round(time.Millisecond)))
	case o.Signal != "":
		parts = append(parts, "killed by "+o.Signal)
	case !o.Exited:
		parts = append(parts, "exit not confirmed")
	}
	if o.CollectorError != "" {
		parts = append(parts, "collector: "+o.CollectorError)
	}
	return strings.Join(parts, "; ")
}

// transcript is the kept output of a process as evidence.
func transcript(o worker.Outcome) []Evidence {
	return []Evidence{
		{Name: "stdout.log", MediaType: "text/plain", Body: o.Output.Stdout()},
		{Name: "stderr.log", MediaType: "text/plain", Body: o.Output.Stderr()},
	}
}

// Dialer connects a built-in agent to the agent API at apiURL with the run token (the
// HTTP client of package client); tests pass one that returns a controlplane.Memory.
type Dialer func(ctx context.Context, apiURL, runToken string) (controlplane.Port, error)
