// Package driver names the agent drivers: the one parser of a profile's driver string
// (catalog profiles, the adapter configuration the heartbeat runner reads, `agentproof
// agent`). Package agent builds a driver from a Name; catalog validation, the heartbeat
// runner and the CLI classify drivers through Name's methods instead of matching text.
//
// It is a leaf vocabulary: it imports nothing of the module. The names of the fixture
// programs, the hostile attacks and the pinned CLIs that have an exec driver belong to
// the packages that implement them (worker, agent/hostile, agent/clis); those names are
// registered into this package from above (Register, called by agent.RegisterDrivers
// from the command line's start), and until they are, Parse refuses them like any
// unknown name.
package driver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Kind is the family of a driver.
type Kind string

// Driver kinds, with their spelling in a driver string.
const (
	// KindFixture is "fixture:<name>": one of the fixture programs of package worker
	// (registered); Name.Arg is the fixture.
	KindFixture Kind = "fixture"
	// KindReference is "reference": the built-in agent that carries out the case's
	// reference script.
	KindReference Kind = "reference"
	// KindNop is "nop": the built-in agent that does nothing (calibration).
	KindNop Kind = "nop"
	// KindWrong is "wrong": the reference agent with a wrong nonce (calibration).
	KindWrong Kind = "wrong"
	// KindLeaky is "leaky": the reference agent that also leaks its credentials
	// (calibration of the leak scan).
	KindLeaky Kind = "leaky"
	// KindExec is "exec": a command and arguments of the profile's own.
	KindExec Kind = "exec"
	// KindCLI is "exec:<cli>": a pinned real agent CLI run by an exec driver
	// (registered from package agent/clis); Name.Arg is its name (codex, opencode,
	// claude, kilo, qwen, copilot).
	KindCLI Kind = "exec:"
	// KindACP is "acp:<agent>": an agent that speaks the Agent Client Protocol, driven
	// as a session by the heartbeat runner (docs/acp.md); Name.Arg is the agent (one of
	// ACPAgents).
	KindACP Kind = "acp:"
	// KindRPC is "rpc:<agent>": a session driver over the agent's own RPC protocol
	// (RPCAgents: pi, docs/pi.md); Name.Arg is the agent.
	KindRPC Kind = "rpc:"
	// KindApp is "app:<agent>": a session driver over an agent's own application
	// protocol (AppAgents: codex, Codex's `codex app-server`; claude, Claude Code's
	// stream-json with its permission prompt tool; docs/clis.md); Name.Arg is the agent.
	KindApp Kind = "app:"
	// KindHostile is "hostile:<attack>": the built-in hostile agent of the hostile
	// suite (registered from package agent/hostile); Name.Arg is the attack, made once
	// before the agent carries out the case's reference script.
	KindHostile Kind = "hostile:"
)

// ExecArgVars are the placeholders ({{name}}, package template) the arguments of an
// exec driver (driverConfig.args) may use: the run's API URL, run id, agent state
// directory, task id and workspace. The run token and secrets are deliberately not
// among them: they reach the agent only through its environment.
var ExecArgVars = []string{"apiUrl", "runId", "stateDir", "taskId", "workspace"}

// ACP agents an acp:<agent> driver may name: agentproof's own (reference, nop,
// wrong, wrong-undo; package agent/acpagent) and the real agents pinned in package
// agent/clis.
const (
	ACPReference = "reference"
	ACPNop       = "nop"
	ACPWrong     = "wrong"
	// ACPWrongUndo writes a declined file and deletes it again (only the workspace
	// watcher's no_mutation catches it).
	ACPWrongUndo = "wrong-undo"
	// ACPWriteFirst writes before asking, then asks for an unrelated read; ACPAskOther
	// asks for an unrelated read, then writes (permission_order catches both).
	ACPWriteFirst = "write-first"
	ACPAskOther   = "ask-other"
	ACPOpenCode   = "opencode"
	ACPCodex      = "codex"
	ACPClaude     = "claude"
	ACPGemini     = "gemini"
)

// ACPAgents lists the agents of the ACP drivers, built-in ones first.
var ACPAgents = []string{ACPReference, ACPNop, ACPWrong, ACPWrongUndo, ACPWriteFirst, ACPAskOther, ACPOpenCode, ACPCodex, ACPClaude, ACPGemini}

// RPCAgents are the agents of the rpc: session drivers.
var RPCAgents = []string{"pi"}

// App agents: Codex through `codex app-server`, Claude Code through its stream-json
// protocol with its permission prompt tool (docs/clis.md).
const (
	AppCodex  = "codex"
	AppClaude = "claude"
)

// AppAgents are the agents of the app: session drivers.
var AppAgents = []string{AppCodex, AppClaude}

// Name is a parsed driver: its Kind and, for KindFixture and KindCLI, the fixture or
// CLI name. The zero Name is no driver. Its JSON form is the driver string.
type Name struct {
	Kind Kind
	Arg  string
}

// Error is a driver string that names no driver: the string and the accepted forms.
type Error struct {
	Driver string
}

// Error renders `unknown driver "<s>" (one of …)`.
func (e *Error) Error() string {
	return fmt.Sprintf("unknown driver %q (one of %s)", e.Driver, strings.Join(Names(), ", "))
}

// registry holds the registered arguments of the kinds whose names belong to packages
// above this one, each kind's in registration order.
var registry struct {
	sync.RWMutex
	args map[Kind][]string
}

// Registrable lists the kinds whose arguments are registered (Register) rather than
// fixed here: fixture programs, pinned CLIs with an exec driver, hostile attacks.
var Registrable = []Kind{KindFixture, KindCLI, KindHostile}

// Register adds args to the names kind k accepts: KindFixture the fixture programs,
// KindCLI the pinned CLIs that have an exec driver, KindHostile the hostile suite's
// attacks. Registering a name again changes nothing; it is safe for concurrent use
// with Parse. A kind that is not Registrable, or an empty argument, is a programming
// error and panics.
func Register(k Kind, args ...string) {
	if !slices.Contains(Registrable, k) {
		panic(fmt.Sprintf("driver: kind %q takes no registered names", k))
	}
	registry.Lock()
	defer registry.Unlock()
	if registry.args == nil {
		registry.args = map[Kind][]string{}
	}
	for _, a := range args {
		if a == "" {
			panic(fmt.Sprintf("driver: an empty name registered for kind %q", k))
		}
		if !slices.Contains(registry.args[k], a) {
			registry.args[k] = append(registry.args[k], a)
		}
	}
}

// Registered returns the names registered for kind k, in registration order (a new
// slice; nil for none).
func Registered(k Kind) []string {
	registry.RLock()
	defer registry.RUnlock()
	return slices.Clone(registry.args[k])
}

// registered reports whether a is a registered name of kind k.
func registered(k Kind, a string) bool {
	registry.RLock()
	defer registry.RUnlock()
	return slices.Contains(registry.args[k], a)
}

// Parse reads a driver string: fixture:<fixture>, reference, nop, wrong, leaky, exec,
// exec:<cli>, hostile:<attack> (fixtures, CLIs and attacks as registered), acp:<agent>
// (ACPAgents), rpc:pi (RPCAgents) or app:codex and app:claude (AppAgents). Anything else (an unregistered fixture, CLI or
// attack, a different case, surrounding space) is an *Error.
func Parse(s string) (Name, error) {
	switch Kind(s) {
	case KindReference, KindNop, KindWrong, KindLeaky, KindExec:
		return Name{Kind: Kind(s)}, nil
	}
	if f, ok := strings.CutPrefix(s, string(KindFixture)+":"); ok && registered(KindFixture, f) {
		return Name{Kind: KindFixture, Arg: f}, nil
	}
	if a, ok := strings.CutPrefix(s, string(KindHostile)); ok && registered(KindHostile, a) {
		return Name{Kind: KindHostile, Arg: a}, nil
	}
	if c, ok := strings.CutPrefix(s, string(KindCLI)); ok && registered(KindCLI, c) {
		return Name{Kind: KindCLI, Arg: c}, nil
	}
	if a, ok := strings.CutPrefix(s, string(KindACP)); ok && slices.Contains(ACPAgents, a) {
		return Name{Kind: KindACP, Arg: a}, nil
	}
	if a, ok := strings.CutPrefix(s, string(KindRPC)); ok && slices.Contains(RPCAgents, a) {
		return Name{Kind: KindRPC, Arg: a}, nil
	}
	if a, ok := strings.CutPrefix(s, string(KindApp)); ok && slices.Contains(AppAgents, a) {
		return Name{Kind: KindApp, Arg: a}, nil
	}
	return Name{}, &Error{Driver: s}
}

// MustParse is Parse for names known to be valid (tests, constants); it panics on an
// error.
func MustParse(s string) Name {
	n, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return n
}

// Names lists every driver string Parse accepts, fixtures, CLIs and attacks in their
// registration order.
func Names() []string {
	var out []string
	for _, f := range Registered(KindFixture) {
		out = append(out, string(KindFixture)+":"+f)
	}
	out = append(out, string(KindReference), string(KindNop), string(KindWrong), string(KindLeaky), string(KindExec))
	for _, c := range Registered(KindCLI) {
		out = append(out, string(KindCLI)+c)
	}
	for _, a := range ACPAgents {
		out = append(out, string(KindACP)+a)
	}
	for _, a := range RPCAgents {
		out = append(out, string(KindRPC)+a)
	}
	for _, a := range AppAgents {
		out = append(out, string(KindApp)+a)
	}
	for _, a := range Registered(KindHostile) {
		out = append(out, string(KindHostile)+a)
	}
	return out
}

// String is the driver string ("" for the zero Name).
func (n Name) String() string {
	switch n.Kind {
	case KindFixture:
		return string(KindFixture) + ":" + n.Arg
	case KindCLI:
		return string(KindCLI) + n.Arg
	case KindACP:
		return string(KindACP) + n.Arg
	case KindRPC:
		return string(KindRPC) + n.Arg
	case KindApp:
		return string(KindApp) + n.Arg
	case KindHostile:
		return string(KindHostile) + n.Arg
	}
	return string(n.Kind)
}

// Session reports whether n is a session driver (rpc:<agent>): one long-lived agent
// process serves the turns through its own protocol (agent.NewPi), not one process per
// run (agent.New).
func (n Name) Session() bool { return n.Kind == KindRPC }

// Warmable reports whether n's agent can keep one process across runs (lifecycle
// warm): a session driver's (an ACP session, a Pi session, a Codex app-server thread).
func (n Name) Warmable() bool { return n.SessionLayer() }

// SessionLayer reports whether n's agent is driven through the session layer (package
// agent/session): acp:<agent>, rpc:<agent> and app:<agent>, one long-lived process
// serving turn after turn over its protocol rather than one process per run.
func (n Name) SessionLayer() bool { return n.Kind == KindACP || n.Kind == KindRPC || n.Kind == KindApp }

// IsZero reports whether n is no driver.
func (n Name) IsZero() bool { return n.Kind == "" }

// Fixture returns the fixture program's name; ok is false for other kinds.
func (n Name) Fixture() (name string, ok bool) { return n.Arg, n.Kind == KindFixture }

// CLI returns the real agent CLI's name; ok is false for other kinds.
func (n Name) CLI() (name string, ok bool) { return n.Arg, n.Kind == KindCLI }

// ACP returns the ACP agent's name (one of ACPAgents); ok is false for other kinds.
func (n Name) ACP() (agent string, ok bool) { return n.Arg, n.Kind == KindACP }

// BuiltinACP reports whether n is one of agentproof's own ACP agents (acp:reference,
// acp:nop, acp:wrong, acp:wrong-undo, acp:write-first, acp:ask-other).
func (n Name) BuiltinACP() bool {
	return n.Kind == KindACP && (n.Arg == ACPNop || n.playsReference())
}

// playsReference reports whether n is a built-in ACP agent that plays the case's
// reference script (every built-in one but nop).
func (n Name) playsReference() bool {
	return n.Kind == KindACP && slices.Contains([]string{ACPReference, ACPWrong, ACPWrongUndo, ACPWriteFirst, ACPAskOther}, n.Arg)
}

// Package returns the agent/clis name of the pinned package n runs: the CLI of
// exec:<cli>, the real agent of acp:<agent> (codex-acp, claude-acp, gemini,
// opencode), the agent of rpc:<agent> (pi) and of app:<agent> (codex); ok is false
// for every other driver (the built-in ACP agents included).
func (n Name) Package() (name string, ok bool) {
	switch {
	case n.Kind == KindCLI, n.Kind == KindRPC, n.Kind == KindApp:
		return n.Arg, true
	case n.Kind != KindACP || n.BuiltinACP():
		return "", false
	case n.Arg == ACPCodex:
		return "codex-acp", true
	case n.Arg == ACPClaude:
		return "claude-acp", true
	}
	return n.Arg, true
}

// Builtin reports whether n runs a built-in agent (`agentproof agent <name>`):
// reference, nop, wrong, leaky or hostile:<attack>.
func (n Name) Builtin() bool {
	return slices.Contains([]Kind{KindReference, KindNop, KindWrong, KindLeaky, KindHostile}, n.Kind)
}

// RunsAgentproof reports whether n's agent process is the agentproof executable itself:
// a fixture program, a built-in agent or a built-in ACP agent.
func (n Name) RunsAgentproof() bool { return n.Kind == KindFixture || n.Builtin() || n.BuiltinACP() }

// HidesDev reports whether n's agent runs its commands in its own bubblewrap sandbox,
// which mounts a fresh /dev: whatever of the agent's state lives under /dev (a memory
// state directory in /dev/shm) is missing inside it, and the agent's sandboxed
// commands fail. Codex is the one such agent: acp:codex (sandbox_mode workspace-write
// on the host: docs/acp.md "Agents") and app:codex (its sandbox mode as the profile
// says: docs/clis.md).
func (n Name) HidesDev() bool {
	return n.Kind == KindACP && n.Arg == ACPCodex || n.Kind == KindApp && n.Arg == AppCodex
}

// NeedsReference reports whether n carries out the case's reference script, so the
// case must have one: reference, wrong, leaky, hostile:<attack>, acp:reference and
// the built-in ACP agents but acp:nop.
func (n Name) NeedsReference() bool {
	return n.Kind == KindReference || n.Kind == KindWrong || n.Kind == KindLeaky || n.Kind == KindHostile || n.playsReference()
}

// Hostile returns the hostile agent's attack; ok is false for other kinds.
func (n Name) Hostile() (attack string, ok bool) { return n.Arg, n.Kind == KindHostile }

// Silent reports whether n's process never talks to the agent API (nop and the
// fixture programs): the runner completes its run without reading it first.
func (n Name) Silent() bool { return n.Kind == KindNop || n.Kind == KindFixture }

// MarshalText is the driver string (what a JSON or YAML encoder writes: a string).
func (n Name) MarshalText() ([]byte, error) { return []byte(n.String()), nil }

// MarshalJSON encodes the driver string.
func (n Name) MarshalJSON() ([]byte, error) { return json.Marshal(n.String()) }

// UnmarshalJSON decodes a driver string with Parse; "" decodes to the zero Name.
func (n *Name) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("driver must be a string: %w", err)
	}
	if s == "" {
		*n = Name{}
		return nil
	}
	p, err := Parse(s)
	if err != nil {
		return err
	}
	*n = p
	return nil
}
