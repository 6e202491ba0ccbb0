package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentproof/agentproof/verdict"
)

// The exit codes of every agentproof command are verdict.ExitCode (README "Exit
// codes"): 0 passed, 1 failed, 2 usage or configuration error, 3 inconclusive,
// 70 internal error (a bug in agentproof), 130 interrupted. A campaign's code is the
// worst of its cells by verdict.Worst.
const (
	ExitOK           = verdict.ExitPassed
	ExitFailed       = verdict.ExitFailed
	ExitUsage        = verdict.ExitUsage
	ExitInconclusive = verdict.ExitInconclusive
	ExitInternal     = verdict.ExitInternal
	ExitInterrupted  = verdict.ExitInterrupted
)

// ExitError carries an exit code on an error so that commands can return it and Main can
// map it to the process's exit status. Err may be nil when the command already printed
// everything it had to say (for example a failed verdict with its report).
type ExitError struct {
	Code verdict.ExitCode
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// UsageError reports bad input (a flag, an argument, a file or field) and maps to ExitUsage.
// The message must name what was wrong and say what to do next.
type UsageError struct {
	Err error
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// usageErrorf builds a *UsageError from a format string.
func usageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// withExit wraps err (which may be nil) so that Main exits with code.
func withExit(code verdict.ExitCode, err error) error {
	return &ExitError{Code: code, Err: err}
}

// exitCode maps an error returned by a command to the process exit status: nil → 0,
// *ExitError → its code, *UsageError (and cobra's unknown-command error) → ExitUsage,
// anything else → ExitInternal: an error no command classified is agentproof's own
// fault, never a failed verdict.
func exitCode(err error) verdict.ExitCode {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	var ue *UsageError
	if errors.As(err, &ue) {
		return ExitUsage
	}
	// cobra reports unknown commands and bad arguments to the root as plain errors.
	if strings.HasPrefix(err.Error(), "unknown command") {
		return ExitUsage
	}
	return ExitInternal
}
