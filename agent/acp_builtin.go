package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/agentproof/agentproof/agent/acpagent"
	"github.com/agentproof/agentproof/agent/driver"
	"github.com/agentproof/agentproof/agent/reference"
)

// ACPBuiltinCommands are the `agentproof agent <name>` names of the built-in ACP agents.
var ACPBuiltinCommands = []string{"acp-" + driver.ACPReference, "acp-" + driver.ACPNop, "acp-" + driver.ACPWrong, "acp-" + driver.ACPWrongUndo, "acp-" + driver.ACPWriteFirst, "acp-" + driver.ACPAskOther}

// RunACPBuiltin is the body of `agentproof agent acp-<reference|nop|wrong|wrong-undo|
// write-first|ask-other>`: it reads its configuration from environ (the process's own
// environment, passed explicitly: EnvStateDir, and EnvConfig with a BuiltinConfig for
// every agent but nop; wrong plays reference.WrongScript of it, the others the script
// itself) and speaks ACP on stdin/stdout until the client closes
// the stream (package acpagent). Diagnostics go to stderr. Errors: an unknown name, a
// missing variable or an invalid configuration (*UsageError).
func RunACPBuiltin(ctx context.Context, name string, environ []string, stdin io.Reader, stdout, stderr io.Writer) error {
	agentName, ok := strings.CutPrefix(name, "acp-")
	if !ok || !IsBuiltinACP(agentName) {
		return &UsageError{Problems: []string{fmt.Sprintf("unknown built-in ACP agent %q (%s)", name, strings.Join(ACPBuiltinCommands, ", "))}}
	}
	vars := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	cfg := acpagent.Config{Name: agentName, StateDir: vars[EnvStateDir], Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if agentName != driver.ACPNop {
		var missing []string
		for _, k := range []string{EnvStateDir, EnvConfig} {
			if vars[k] == "" {
				missing = append(missing, k+" is not set")
			}
		}
		if len(missing) > 0 {
			return &UsageError{Problems: missing}
		}
		bc, err := ParseBuiltinConfig([]byte(vars[EnvConfig]))
		if err != nil {
			return &UsageError{Problems: []string{err.Error()}}
		}
		cfg.Script = bc.Reference
		if agentName == driver.ACPWrong {
			if cfg.Script, err = reference.WrongScript(bc.Reference, bc.Nonce); err != nil {
				return &UsageError{Problems: []string{err.Error()}}
			}
		}
	}
	if err := acpagent.Serve(ctx, cfg, stdin, stdout); err != nil {
		return &UsageError{Problems: []string{err.Error()}}
	}
	return nil
}
