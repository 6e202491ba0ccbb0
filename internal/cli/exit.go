package cli

import (
	"errors"
	"fmt"
	"strings"
)

// Exit codes of every agentproof command. A campaign's code is the worst of its cells:
// ExitFailed beats ExitInconclusive beats ExitOK (DESIGN.md "Verdicts").
const (
	// ExitOK: everything passed (or, for a calibration cell, met its expectation).
	ExitOK = 0
	// ExitFailed: at least one verdict is failed (the candidate is at fault or a safety rule broke).
	ExitFailed = 1
	// ExitUsage: a usage or configuration error, reported before anything started.
	ExitUsage = 2
	// ExitInconclusive: nothing failed, but some evidence was incomplete.
	ExitInconclusive = 3
	// ExitInterrupted: the user interrupted the command (SIGINT or SIGTERM).
	ExitInterrupted = 130
)

// ExitError carries an exit code on an error so that commands can return it and Main can
// map it to the process's exit status. Err may be nil when the command already printed
// everything it had to say (for example a failed verdict with its report).
type ExitError struct {
	Code int
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
func withExit(code int, err error) error {
	return &ExitError{Code: code, Err: err}
}

// exitCode maps an error returned by a command to the process exit status: nil → 0,
// *ExitError → its code, *UsageError → ExitUsage, anything else → 1 (an unexpected fault).
func exitCode(err error) int {
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
	return ExitFailed
}
