package catalog

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/worker"
)

// ExecArgVars are the placeholders an exec profile's driverConfig.args may use
// (driver.ExecArgVars). Package agent renders them.
var ExecArgVars = driver.ExecArgVars

// Bounds of an exec profile's driverConfig (what package agent's exec driver and the
// heartbeat runner read: command, args, env, timeoutMs, maxOutputBytes).
const (
	// MaxDriverTimeoutMs is the largest driverConfig.timeoutMs of an exec agent
	// process: 24 hours, in milliseconds.
	MaxDriverTimeoutMs = 24 * 60 * 60 * 1000
	// MaxDriverOutputBytes is the largest driverConfig.maxOutputBytes (the combined
	// stdout+stderr budget of one agent process, bytes): the worker's own limit.
	MaxDriverOutputBytes = worker.MaxOutputBytes
)

var (
	// execConfigKeys are the driverConfig keys of the exec driver.
	execConfigKeys = []string{"args", "command", "env", "maxOutputBytes", "timeoutMs"}
	// envNameRE is the grammar of an environment variable name a secret may take.
	envNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
)

// validateExecConfig checks an exec profile's driverConfig before anything starts: the
// command is an absolute path to an existing executable regular file (no PATH lookup,
// no shell), args is a list of strings whose templates use only ExecArgVars, env names
// are environment variable names (its values are checked as secret references by
// scanPayload), timeoutMs is a whole number of milliseconds in 1..MaxDriverTimeoutMs and
// maxOutputBytes a whole number of bytes in 1..MaxDriverOutputBytes; any other key is a
// problem. Each problem points at its key or list item.
func (v *validator) validateExecConfig(p *Profile) {
	cfg := p.DriverConfig
	node := v.c.rawOf(&p.DriverConfig)
	base := v.at(&p.DriverConfig, p)
	// at is the position of key's value (or of key, or of driverConfig).
	at := func(key string, item int) Pos {
		if node == nil || node.Kind != yaml.MappingNode {
			return base
		}
		for i := 0; i+1 < len(node.Content); i += 2 {
			if node.Content[i].Value != key {
				continue
			}
			n := node.Content[i+1]
			if item >= 0 && n.Kind == yaml.SequenceNode && item < len(n.Content) {
				n = n.Content[item]
			}
			return Pos{File: base.File, Line: n.Line, Column: n.Column}
		}
		return base
	}
	name := "profile " + p.ID + " driverConfig"
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		if !slices.Contains(execConfigKeys, k) {
			v.add(at(k, -1), "%s: unknown key %q for driver exec (keys: %s)", name, k, strings.Join(execConfigKeys, ", "))
		}
	}
	v.checkExecCommand(at("command", -1), name, cfg["command"])
	if raw, ok := cfg["args"]; ok {
		list, isList := raw.([]any)
		if !isList {
			v.add(at("args", -1), "%s.args must be a list of strings", name)
		}
		for i, a := range list {
			s, isString := a.(string)
			if !isString {
				v.add(at("args", i), "%s.args[%d] must be a string, not %s", name, i, describeValue(a))
				continue
			}
			t, err := ParseTemplate(s)
			if err != nil {
				v.add(at("args", i), "%s.args[%d]: %v", name, i, err)
				continue
			}
			for _, vr := range t.Vars() {
				if !slices.Contains(ExecArgVars, vr) {
					v.add(at("args", i), "%s.args[%d] uses {{%s}}; args may use only %s (the run token and secrets reach the agent only through its environment)",
						name, i, vr, strings.Join(ExecArgVars, ", "))
				}
			}
		}
	}
	if raw, ok := cfg["env"]; ok {
		m, isMap := raw.(map[string]any)
		if !isMap {
			v.add(at("env", -1), "%s.env must map environment variable names to secret references", name)
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !envNameRE().MatchString(k) {
				v.add(at("env", -1), "%s.env name %q is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)", name, k)
			}
		}
	}
	if raw, ok := cfg["timeoutMs"]; ok {
		if n, whole := wholeNumber(raw); !whole || n < 1 || n > MaxDriverTimeoutMs {
			v.add(at("timeoutMs", -1), "%s.timeoutMs must be a whole number of milliseconds in 1..%d (24 hours), not %s", name, MaxDriverTimeoutMs, describeValue(raw))
		}
	}
	if raw, ok := cfg["maxOutputBytes"]; ok {
		if n, whole := wholeNumber(raw); !whole || n < 1 || n > MaxDriverOutputBytes {
			v.add(at("maxOutputBytes", -1), "%s.maxOutputBytes must be a whole number of bytes in 1..%d (%d MiB), not %s", name, MaxDriverOutputBytes, MaxDriverOutputBytes>>20, describeValue(raw))
		}
	}
}

// checkExecCommand checks driverConfig.command: an absolute path (no NUL) naming an
// existing regular file with an execute bit, symbolic links followed.
func (v *validator) checkExecCommand(pos Pos, name string, raw any) {
	cmd, ok := raw.(string)
	switch {
	case raw == nil:
		v.add(pos, "%s.command (the absolute path of the agent's executable) is required for driver exec", name)
		return
	case !ok || cmd == "":
		v.add(pos, "%s.command must be an absolute path, not %s", name, describeValue(raw))
		return
	case strings.ContainsRune(cmd, 0) || !filepath.IsAbs(cmd):
		v.add(pos, "%s.command %q must be an absolute path (no PATH lookup, no shell)", name, cmd)
		return
	}
	fi, err := os.Stat(cmd)
	switch {
	case err != nil:
		v.add(pos, "%s.command %s does not exist or cannot be read: %v", name, cmd, pathErr(err))
	case fi.IsDir():
		v.add(pos, "%s.command %s is a directory, not an executable file", name, cmd)
	case !fi.Mode().IsRegular():
		v.add(pos, "%s.command %s is %s, not an executable regular file", name, cmd, fileKind(fi.Mode()))
	case fi.Mode().Perm()&0o111 == 0:
		v.add(pos, "%s.command %s is not executable (mode %04o)", name, cmd, fi.Mode().Perm())
	}
}

// pathErr is err without the path an *os.PathError repeats.
func pathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// wholeNumber returns v as an integer when it is one of the number shapes YAML decoding
// produces and has no fractional part.
func wholeNumber(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case uint64:
		return int64(min(n, math.MaxInt64)), true
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<62 {
			return int64(n), true
		}
	}
	return 0, false
}

// describeValue names a decoded YAML value's kind for a message (never a long value).
func describeValue(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case string:
		if len(t) > 40 {
			return "a string"
		}
		return fmt.Sprintf("the string %q", t)
	case bool:
		return fmt.Sprintf("%t", t)
	case int, int64, uint64, float64:
		return fmt.Sprintf("%v", t)
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}
