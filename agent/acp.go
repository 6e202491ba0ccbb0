package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/session"
	"github.com/agentproof/agentproof/api"
	"github.com/agentproof/agentproof/worker"
)

// ACP drivers (docs/acp.md): acp:<agent> runs an agent that speaks the Agent Client
// Protocol on its stdin/stdout, with agentproof as the ACP client. Unlike the exec
// drivers (one process per run, supervised to its exit), an ACP driver starts a
// session of the session layer (ACPDriver.Start: the process, initialize, session/new
// with the workspace as cwd and the agentproof MCP server; acp_session.go is the
// protocol) that serves one prompt per turn (session.Session.Prompt) until it is
// closed: one turn per session (per_turn) or several (warm).
//
// Agents: reference, nop and wrong are agentproof's own ACP agents (`agentproof agent
// acp-reference|acp-nop|acp-wrong`, package agent/acpagent), the calibration of the
// native-boundary cases; opencode, codex, claude and gemini are real agents (pinned in
// package agent/clis) driven offline against the scripted model.

// ACPDriverPrefix starts every ACP driver name.
const ACPDriverPrefix = string(driver.KindACP)

// ACPAgents lists the agents of the ACP drivers, built-in ones first.
var ACPAgents = driver.ACPAgents

// IsBuiltinACP reports whether agent is one of agentproof's own ACP agents.
func IsBuiltinACP(agent string) bool {
	return driver.Name{Kind: driver.KindACP, Arg: agent}.BuiltinACP()
}

// ACP driver configuration keys (driverConfig of an acp:<agent> profile), besides
// timeoutMs (the whole session's lifetime, ms), maxOutputBytes (the agent's stdout,
// bytes) and, for the real agents, binary and modelBaseUrl (CLIKeyBinary,
// CLIKeyModelBaseURL) and script (CLIKeyScript).
const (
	// ACPKeyTurnTimeout bounds one prompt turn (ms); at the deadline the driver sends
	// session/cancel and, if the turn still does not end, gives up on the session.
	ACPKeyTurnTimeout = "turnTimeoutMs"
	// ACPKeyCancelGrace is how long a turn may take to end after session/cancel before
	// the driver gives up on the session (ms).
	ACPKeyCancelGrace = "cancelGraceMs"
	// ACPKeyStartTimeout bounds the start (process, initialize and session/new; ms).
	ACPKeyStartTimeout = "startTimeoutMs"
	// ACPKeyNode is the absolute path of the Node.js binary that runs a JavaScript agent
	// (claude, gemini): binary is then the agent's entry script.
	ACPKeyNode = "node"
	// ACPKeyClientFS turns the client's file system capability (fs/read_text_file,
	// fs/write_text_file, confined to the workspace) on or off; default on, except for
	// gemini.
	ACPKeyClientFS = "clientFs"
)

// Defaults of an ACP driver.
const (
	DefaultACPTurnTimeout  = 5 * time.Minute
	DefaultACPStartTimeout = 2 * time.Minute
	// DefaultACPCancelGrace is how long a cancelled turn may take to end with its
	// response before the driver gives up on the session.
	DefaultACPCancelGrace = 15 * time.Second
)

// ACPDriver starts ACP sessions of one agent. It is immutable and safe for concurrent
// use.
type ACPDriver struct {
	agent    string
	clientFS bool
	bounds   bounds
	sessionSettings
}

// NewACP returns the ACP driver name (kind driver.KindACP, one of ACPAgents)
// configured by config (the profile's driverConfig): TimeoutMs (the whole session's
// life, ms), MaxOutputBytes (the agent's stdout, bytes; default
// DefaultCLIMaxOutputBytes), TurnTimeoutMs, StartTimeoutMs, CancelGraceMs (ms, > 0),
// ClientFS and, for the real agents, Binary and Node (absolute paths), ModelBaseURL (a
// loopback http URL) and Script (oracle, nop or wrong). Another kind, a key the driver
// does not read and a value out of range are a *ConfigError listing every problem.
func NewACP(name driver.Name, config api.DriverConfig) (*ACPDriver, error) {
	ce := &ConfigError{Driver: name.String()}
	agentName, ok := name.ACP()
	if !ok || !slices.Contains(ACPAgents, agentName) {
		ce.Problems = append(ce.Problems, fmt.Sprintf("unknown ACP driver (one of %s%s)", ACPDriverPrefix, strings.Join(ACPAgents, ", "+ACPDriverPrefix)))
		return nil, ce
	}
	// Gemini CLI 0.61 cannot create a file through the client: it reads first and does
	// not recognise the client's "Resource not found" error (docs/acp.md), so it gets
	// no fs capability unless the profile asks for it.
	d := &ACPDriver{agent: agentName, clientFS: agentName != driver.ACPGemini, sessionSettings: defaultSessionSettings()}
	reads := []string{ACPKeyTurnTimeout, ACPKeyStartTimeout, ACPKeyCancelGrace, ACPKeyClientFS}
	if !IsBuiltinACP(agentName) {
		reads = append(reads, CLIKeyBinary, CLIKeyModelBaseURL, CLIKeyScript, ACPKeyNode)
	}
	d.bounds = parseBounds(config, name, ce, reads)
	if config.MaxOutputBytes == nil {
		d.bounds.maxOutput = DefaultCLIMaxOutputBytes
	}
	d.sessionSettings.parse(config, ce)
	if config.ClientFS != nil {
		d.clientFS = *config.ClientFS
	}
	if len(ce.Problems) > 0 {
		return nil, ce
	}
	return d, nil
}

// Name is the driver's name, "acp:<agent>".
func (d *ACPDriver) Name() string { return ACPDriverPrefix + d.agent }

// Agent is the agent's short name (one of ACPAgents).
func (d *ACPDriver) Agent() string { return d.agent }

// ACPSessionDir is the directory of ACP session n (1-based) of an agent below its
// state directory: STATE/acp-sessions/<n>. It holds the session's HOME (home/), XDG
// directories, TMPDIR (tmp/), the agent's own configuration directory when it needs one
// (codex-home/, claude/, gemini/), and run-id (the run that started it).
func ACPSessionDir(stateDir string, n int) string {
	return filepath.Join(stateDir, acpSessions, strconv.Itoa(n))
}

// acpSessions is the directory of an agent's ACP sessions below its state directory.
const acpSessions = "acp-sessions"

// nextSessionIndex returns the next free session index (1-based) in the sessions
// directory sessions ("acp-sessions", "pi-sessions") below stateDir.
func nextSessionIndex(stateDir, sessions string) (int, error) {
	entries, err := os.ReadDir(filepath.Join(stateDir, sessions))
	if err != nil && !os.IsNotExist(err) {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if i, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
			n = max(n, i)
		}
	}
	return n + 1, nil
}

// launch plans session n of the agent for env (pure: the layer creates what it
// lists); confined: the process will run inside a sandbox lease (realPlan).
func (d *ACPDriver) launch(env RunEnv, n int, confined bool) (session.Launch, error) {
	if err := requireRun(env, true); err != nil {
		return session.Launch{}, err
	}
	if err := requireExecutable(env); err != nil {
		return session.Launch{}, err
	}
	if IsBuiltinACP(d.agent) {
		return d.builtinLaunch(env, n)
	}
	if d.binary == "" {
		return session.Launch{}, fmt.Errorf("agent: %s: no binary configured (driverConfig binary; `agentproof agents install %s`)", d.Name(), acpPackage(d.agent))
	}
	if d.modelURL == "" {
		return session.Launch{}, fmt.Errorf("agent: %s: no model endpoint: driverConfig needs modelBaseUrl (the scripted model)", d.Name())
	}
	l, _, vars := d.bounds.sessionLaunch(env, acpSessions, n)
	p, err := d.realPlan(env, l.Dir, d.modelURL+"/runs/"+strconv.Itoa(n)+"/v1", confined)
	if err != nil {
		return session.Launch{}, err
	}
	for _, kv := range p.env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v // the plan's entries win over the base
	}
	if l.Spec.Env, err = sessionEnviron(vars, env.Secrets); err != nil {
		return session.Launch{}, err
	}
	l.Dirs = append(l.Dirs, p.dirs...)
	maps.Copy(l.Files, p.files)
	l.Spec.Path = d.binary
	l.Spec.Args = append([]string{d.binary}, p.args...)
	if d.node != "" {
		l.Spec.Path = d.node
		l.Spec.Args = append([]string{d.node, d.binary}, p.args...)
	} else if strings.HasSuffix(d.binary, ".js") || strings.HasSuffix(d.binary, ".mjs") {
		return session.Launch{}, fmt.Errorf("agent: %s: binary %s is a JavaScript entry point: driverConfig node must name the Node.js binary", d.Name(), d.binary)
	}
	if d.agent == driver.ACPCodex || d.agent == driver.ACPClaude || d.agent == driver.ACPGemini {
		l.CloseGrace = session.CloseGraceIgnoringEOF // they do not exit when their stdin closes
	}
	return l, nil
}

// builtinLaunch plans session n of one of agentproof's own ACP agents: the agentproof
// binary (`agentproof agent acp-<agent>`) with the built-in agent's configuration; it
// keeps its state in the state directory itself.
func (d *ACPDriver) builtinLaunch(env RunEnv, n int) (session.Launch, error) {
	l := session.Launch{Index: n, Dir: ACPSessionDir(env.StateDir, n), CloseGrace: session.CloseGrace,
		Spec: worker.Spec{Dir: env.Workspace, Timeout: d.bounds.timeout, MaxOutputBytes: d.bounds.maxOutput, Path: env.Executable,
			Args: []string{"agentproof", "agent", "acp-" + d.agent},
			Env: []string{"HOME=" + env.StateDir, "LANG=C", "PATH=/usr/bin:/bin", "TZ=UTC",
				EnvWorkspace + "=" + env.Workspace, EnvStateDir + "=" + env.StateDir}}}
	if d.agent != driver.ACPNop {
		if _, err := ParseBuiltinConfig(env.AdapterConfig); err != nil {
			return session.Launch{}, err
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, env.AdapterConfig); err != nil {
			return session.Launch{}, fmt.Errorf("agent: built-in agent configuration: %w", err)
		}
		l.Spec.Env = append(l.Spec.Env, EnvConfig+"="+compact.String())
	}
	slices.Sort(l.Spec.Env)
	return l, nil
}

// acpPackage is the agent/clis name of a real ACP agent's package.
func acpPackage(agent string) string {
	pkg, _ := driver.Name{Kind: driver.KindACP, Arg: agent}.Package()
	return pkg
}
