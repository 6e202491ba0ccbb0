package controlplane

import (
	"errors"
	"fmt"
)

// Error is the state machine's typed error (spec §2 "Common error type"). Code is one of
// the catalogue codes of spec §8 (for example "checkout_conflict") or a scripted fault
// code; Retryable is true only for scripted faults. Its JSON form {code, message,
// retryable} survives a round trip over HTTP.
type Error struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

// Error returns "<code>: <message>".
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// CodeOf returns the Code of the first *Error in err's chain, or "" when there is none.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// IsRetryable reports whether err carries a retryable *Error (a scripted fault).
func IsRetryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retryable
}

func newErr(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
