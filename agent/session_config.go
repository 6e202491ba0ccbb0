package agent

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentproof/agentproof/api"
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
	if v := config.Script; v != "" && v != ScriptOracle && v != ScriptNop && v != ScriptWrong {
		ce.Problems = append(ce.Problems, fmt.Sprintf("script %s is not %s, %s or %s", v, ScriptOracle, ScriptNop, ScriptWrong))
	}
}
