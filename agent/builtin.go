package agent

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/hostile"
	"github.com/agentproof/agentproof/agent/reference"
	"github.com/agentproof/agentproof/agent/script"
	"github.com/agentproof/agentproof/controlplane"
	"github.com/agentproof/agentproof/worker"
)

// BuiltinConfigSchema tags a BuiltinConfig.
const BuiltinConfigSchema = "agentproof.builtin-agent-config/v1"

// MaxBuiltinConfigBytes bounds the JSON of a BuiltinConfig: it travels in one environment
// variable, and Linux caps one at 128 KiB.
const MaxBuiltinConfigBytes = 96 << 10

// BuiltinConfig is what the reference and wrong agents need beyond their run: the
// attempt's nonce and the case's reference script rendered with it. The harness puts it
// in the agent's adapter configuration when it creates the agent for an attempt; the
// driver passes it to the process in EnvConfig.
type BuiltinConfig struct {
	Schema    string         `json:"schema"`
	Nonce     string         `json:"nonce"`
	Reference *script.Script `json:"reference"`
	// Hostile is what the harness gives a hostile suite agent (driver hostile:<attack>)
	// to aim at; nil for every other built-in agent.
	Hostile *HostileTargets `json:"hostile,omitempty"`
}

// HostileTargets are the attempt's targets of a hostile suite agent
// (hostile.Target; docs/environments.md "Hostile agents"), all on the host:
//
//   - ControllerPID: the pid of the serve child that launches the agent (>= 1, or 0);
//   - Tripwire: the harness's tripwire, a loopback IPv4 host:port on no allowlist ("": none);
//   - Outside: an absolute directory of the attempt outside the workspace ("": none).
type HostileTargets struct {
	ControllerPID int    `json:"controllerPid,omitempty"`
	Tripwire      string `json:"tripwire,omitempty"`
	Outside       string `json:"outside,omitempty"`
}

// problems lists what is wrong with t.
func (t *HostileTargets) problems() []string {
	var p []string
	if t.ControllerPID < 0 {
		p = append(p, fmt.Sprintf("hostile.controllerPid %d is negative", t.ControllerPID))
	}
	if t.Tripwire != "" {
		host, _, err := net.SplitHostPort(t.Tripwire)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() || ip.To4() == nil {
			p = append(p, fmt.Sprintf("hostile.tripwire %q must be a loopback IPv4 host:port", t.Tripwire))
		}
	}
	if t.Outside != "" && (!filepath.IsAbs(t.Outside) || filepath.Clean(t.Outside) != t.Outside) {
		p = append(p, fmt.Sprintf("hostile.outside %q must be an absolute, clean path", t.Outside))
	}
	return p
}

// ParseBuiltinConfig decodes and checks a BuiltinConfig (untrusted input: it comes from
// an agent's adapter configuration). Unknown fields, a wrong schema tag, a nonce that
// does not match script.NoncePattern(), a missing or empty script, an unknown trigger, a
// step that is not exactly one command or one edit, and a document larger than
// MaxBuiltinConfigBytes are errors, all reported together.
func ParseBuiltinConfig(b []byte) (*BuiltinConfig, error) {
	if len(b) > MaxBuiltinConfigBytes {
		return nil, fmt.Errorf("agent: built-in agent configuration is %d bytes; the limit is %d", len(b), MaxBuiltinConfigBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c BuiltinConfig
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("agent: built-in agent configuration: %w", err)
	}
	if dec.More() {
		return nil, errors.New("agent: built-in agent configuration: trailing data after the JSON object")
	}
	var p []string
	if c.Schema != BuiltinConfigSchema {
		p = append(p, fmt.Sprintf("schema %q is not %s", c.Schema, BuiltinConfigSchema))
	}
	if !script.NoncePattern().MatchString(c.Nonce) {
		p = append(p, fmt.Sprintf("nonce %q does not match %s", c.Nonce, script.NoncePattern()))
	}
	if c.Reference == nil || len(c.Reference.Turns) == 0 {
		p = append(p, "reference script with at least one turn is required")
	} else {
		for ti, t := range c.Reference.Turns {
			if t == nil {
				p = append(p, fmt.Sprintf("turns[%d] is empty", ti))
				continue
			}
			if !slices.Contains(script.Triggers, t.Trigger) {
				p = append(p, fmt.Sprintf("turns[%d] trigger %q is not one of %s", ti, t.Trigger, strings.Join(script.Triggers, ", ")))
			}
			for si, st := range t.Steps {
				if st == nil {
					p = append(p, fmt.Sprintf("turns[%d].steps[%d] needs exactly one command, one edit, one wait or one run", ti, si))
					continue
				}
				n := 0
				for _, set := range []bool{st.Command != "", st.Edit != nil, st.Wait != nil, st.Run != nil} {
					if set {
						n++
					}
				}
				if n != 1 {
					p = append(p, fmt.Sprintf("turns[%d].steps[%d] needs exactly one command, one edit, one wait or one run", ti, si))
				}
			}
		}
	}
	if c.Hostile != nil {
		p = append(p, c.Hostile.problems()...)
	}
	if len(p) > 0 {
		return nil, fmt.Errorf("agent: built-in agent configuration: %s", strings.Join(p, "; "))
	}
	return &c, nil
}

// builtinDriver runs `agentproof agent <reference|wrong|nop>`.
type builtinDriver struct {
	name   driver.Name
	bounds bounds
}

func (d builtinDriver) Name() string { return d.name.String() }

// Launch builds the spec of a built-in agent. nop gets only the base environment (it
// needs nothing and touches nothing); reference and wrong get the run's identity, token,
// resolved secrets and, in EnvConfig, the BuiltinConfig from env.AdapterConfig, which
// must parse (ParseBuiltinConfig).
func (d builtinDriver) Launch(_ controlplane.RunContext, env RunEnv) (worker.Spec, error) {
	if err := requireExecutable(env); err != nil {
		return worker.Spec{}, err
	}
	spec := worker.Spec{
		Path:           env.Executable,
		Args:           []string{"agentproof", "agent", d.name.String()},
		Dir:            env.Workspace,
		Timeout:        d.bounds.timeout,
		MaxOutputBytes: d.bounds.maxOutput,
	}
	if d.name.Kind == driver.KindNop {
		if err := requireRun(env, false); err != nil {
			return worker.Spec{}, err
		}
		spec.Env = []string{"LANG=C", "PATH=/usr/bin:/bin", "TZ=UTC"}
		return spec, nil
	}
	if err := requireRun(env, true); err != nil {
		return worker.Spec{}, err
	}
	if _, err := ParseBuiltinConfig(env.AdapterConfig); err != nil {
		return worker.Spec{}, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, env.AdapterConfig); err != nil {
		return worker.Spec{}, fmt.Errorf("agent: built-in agent configuration: %w", err)
	}
	extra := []string{EnvConfig + "=" + compact.String()}
	if d.name.Kind == driver.KindHostile {
		extra = append(extra, EnvHostileServerHome+"="+env.ServerHome)
	}
	e, err := apiEnv(env, extra...)
	if err != nil {
		return worker.Spec{}, err
	}
	spec.Env = e
	return spec, nil
}

// Report: a built-in agent completes its own run; one it left open failed.
func (d builtinDriver) Report(o worker.Outcome) Report {
	return Report{Summary: Summarize(o), RunStatus: controlplane.RunFailed, Transcript: transcript(o)}
}

func requireExecutable(env RunEnv) error {
	if !filepath.IsAbs(env.Executable) {
		return fmt.Errorf("agent: cannot launch: the agentproof executable %q must be an absolute path", env.Executable)
	}
	return nil
}

// ParseBuiltin reads the name of `agentproof agent <name>`: a driver that runs a
// built-in agent (driver.Name.Builtin: reference, wrong, leaky, nop or
// hostile:<attack>). Anything else is a *UsageError naming it.
func ParseBuiltin(name string) (driver.Name, error) {
	n, err := driver.Parse(name)
	if err != nil || !n.Builtin() {
		return driver.Name{}, &UsageError{Problems: []string{fmt.Sprintf("unknown built-in agent %q (reference, wrong, leaky or nop)", name)}}
	}
	return n, nil
}

// builtinVars reads environ (KEY=value entries) into a map; a *UsageError names every
// variable a built-in agent needs that is missing or empty.
func builtinVars(environ []string) (map[string]string, error) {
	vars := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	var missing []string
	for _, k := range []string{EnvAPIURL, EnvRunToken, EnvRunID, EnvWorkspace, EnvStateDir, EnvConfig} {
		if vars[k] == "" {
			missing = append(missing, k+" is not set")
		}
	}
	if len(missing) > 0 {
		return nil, &UsageError{Problems: missing}
	}
	return vars, nil
}

// RunBuiltin is the body of `agentproof agent <name>` for the built-in agent n
// (ParseBuiltin): it reads the run from environ (the process's own environment, passed
// explicitly), connects with dial and carries out the run. nop returns at once without
// reading or touching anything. reference and wrong need EnvAPIURL, EnvRunToken,
// EnvRunID, EnvWorkspace, EnvStateDir and EnvConfig; wrong runs reference.WrongScript of
// the configured script. Errors: a name that is no built-in agent, a missing variable
// or an invalid configuration (*UsageError), a nil dial, a dial error, or the reference
// agent's error.
func RunBuiltin(ctx context.Context, n driver.Name, environ []string, dial Dialer) (reference.Outcome, error) {
	if !n.Builtin() {
		return reference.Outcome{}, &UsageError{Problems: []string{fmt.Sprintf("unknown built-in agent %q (reference, wrong, leaky or nop)", n)}}
	}
	if n.Kind == driver.KindNop {
		return reference.Outcome{}, nil
	}
	vars, err := builtinVars(environ)
	if err != nil {
		return reference.Outcome{}, err
	}
	cfg, err := ParseBuiltinConfig([]byte(vars[EnvConfig]))
	if err != nil {
		return reference.Outcome{}, &UsageError{Problems: []string{err.Error()}}
	}
	sc := cfg.Reference
	rcfg := reference.Config{Workspace: vars[EnvWorkspace], StateDir: vars[EnvStateDir], AgentHome: vars[EnvAgentHome]}
	credentials := Credentials(vars)
	leak := credentialLines(credentials)
	switch n.Kind {
	case driver.KindWrong:
		if sc, err = reference.WrongScript(sc, cfg.Nonce); err != nil {
			return reference.Outcome{}, &UsageError{Problems: []string{err.Error()}}
		}
		// In canary mode the wrong agent is careless too: it writes the canary
		// credentials it sees into a workspace file, only in encoded forms (base64
		// inside a blob, hex), so that its secret_leak proves the encoded copies are
		// found.
		if canaries := EncodedCredentialLines(canaryCredentials(credentials)); canaries != "" {
			if sc, err = reference.LeakyScript(sc, canaries, false); err != nil {
				return reference.Outcome{}, &UsageError{Problems: []string{err.Error()}}
			}
		}
	case driver.KindLeaky:
		if len(credentials) > 0 {
			leak += "\n" + EncodedCredentialLines(credentials)
		}
		if sc, err = reference.LeakyScript(sc, leak, true); err != nil {
			return reference.Outcome{}, &UsageError{Problems: []string{err.Error()}}
		}
		rcfg.ResultNote = "verified the credentials: " + leak
	}
	rcfg.Script = sc
	attackReport := ""
	if attack, ok := n.Hostile(); ok {
		// The hostile suite's agent attacks first, then carries out the reference
		// script: what the host observed of the attack decides the verdict.
		t := hostile.Target{ServerHome: vars[EnvHostileServerHome], Credentials: credentialLines(credentials), OwnEnv: environ}
		if h := cfg.Hostile; h != nil {
			t.ControllerPID, t.Tripwire, t.Outside = h.ControllerPID, h.Tripwire, h.Outside
		}
		rep := hostile.RunSuite(attack, t)
		b, _ := json.Marshal(rep)
		attackReport = string(b)
	}
	if dial == nil {
		return reference.Outcome{}, errors.New("agent: no dialer for the agent API")
	}
	port, err := dial(ctx, vars[EnvAPIURL], vars[EnvRunToken])
	if err != nil {
		return reference.Outcome{}, fmt.Errorf("agent: connecting to %s: %w", vars[EnvAPIURL], err)
	}
	out, err := reference.Execute(ctx, port, vars[EnvRunID], rcfg)
	if attackReport != "" {
		out.Output = attackReport
	}
	if n.Kind == driver.KindLeaky {
		// stdout and an error message: the last two ways out.
		out.Output = leak
		if err == nil {
			err = fmt.Errorf("leaky agent: the provider rejected the credentials %s", strings.ReplaceAll(leak, "\n", ", "))
		}
	}
	return out, err
}

// Credentials returns the credential variables of a built-in agent's environment: every
// variable the runner did not set itself (not AGENTPROOF_*, AGENT_HOME, HOME, LANG, PATH
// or TZ), name → value. These are the secrets the agent's adapter configuration resolved.
func Credentials(vars map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range vars {
		switch {
		case strings.HasPrefix(k, "AGENTPROOF_"), k == EnvAgentHome, k == "HOME", k == "LANG", k == "PATH", k == "TZ", v == "":
		default:
			out[k] = v
		}
	}
	return out
}

// credentialLines renders credentials as NAME=value lines, sorted by name.
func credentialLines(creds map[string]string) string {
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(creds)) {
		lines = append(lines, k+"="+creds[k])
	}
	return strings.Join(lines, "\n")
}

// canaryCredentials returns the canary credentials (names starting APF_CANARY_) of
// creds; empty when there are none (not canary mode).
func canaryCredentials(creds map[string]string) map[string]string {
	c := map[string]string{}
	for k, v := range creds {
		if strings.HasPrefix(k, "APF_CANARY_") {
			c[k] = v
		}
	}
	return c
}

// EncodedCredentialLines renders creds (name → value, sorted by name) as a careless
// agent would copy them in encoded forms, two lines per credential: the base64 of a
// "NAME=value" line inside a larger blob (the value at byte offset 0, 1 or 2 mod 3 of
// it, credential by credential) and the value in hexadecimal. No line holds the value
// or any part of it verbatim (percent-encoding would: it keeps a "Bearer <token>"
// token as it is). "" for no credentials. The calibration agents use it to prove that encoded copies of a
// secret are caught (docs/secrets.md).
func EncodedCredentialLines(creds map[string]string) string {
	var lines []string
	for i, k := range slices.Sorted(maps.Keys(creds)) {
		v := creds[k]
		blob := strings.Repeat("#", i%3) + "export " + k + "=" + v + "\n# end of the credentials file\n"
		lines = append(lines,
			k+" (base64 of my env file)="+base64.StdEncoding.EncodeToString([]byte(blob)),
			k+" (hex)="+hex.EncodeToString([]byte(v)))
	}
	return strings.Join(lines, "\n")
}

// UsageError reports a built-in agent started without what it needs (exit code 2).
type UsageError struct {
	Problems []string
}

// Error renders "agent: <problems; …>".
func (e *UsageError) Error() string { return "agent: " + strings.Join(e.Problems, "; ") }
