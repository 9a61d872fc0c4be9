// Package fault is Visor's one coded error type. Domain code returns a
// *fault.Error (or wraps one with %w); each edge (admin API, MCP endpoint,
// OAuth) maps the Code to its own wire status in exactly one place.
//
// Msg is safe to show the caller. Anything internal stays in the wrapped
// error chain, which edges log but never send.
package fault

import (
	"errors"
	"fmt"
)

// Code classifies a failure by what the caller can do about it.
type Code string

// The codes. Edges switch on these; add one only with a mapping at each edge.
const (
	Invalid      Code = "invalid_argument" // the caller sent something wrong
	NotFound     Code = "not_found"        // no such thing, or not visible to the caller
	Conflict     Code = "conflict"         // the state forbids it (duplicate name, reserved name)
	Forbidden    Code = "forbidden"        // the caller is known but may not do this
	Unauthorized Code = "unauthenticated"  // no valid credential
	TooLarge     Code = "too_large"        // a size limit was exceeded
	RateLimited  Code = "rate_limited"     // slow down
	Unavailable  Code = "unavailable"      // a dependency is down; retry later
	Internal     Code = "internal"         // a bug or an unexpected failure
)

// Error is a coded error with a message that is safe to show the caller.
type Error struct {
	Code Code
	Msg  string
	Err  error // internal cause, logged, never shown
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Msg, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// New returns a coded error whose message is formatted from format and args.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Newf is New with an internal cause attached.
func Newf(code Code, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// CodeOf returns the code of the first *Error in err's chain, Internal for any
// other non-nil error, and "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	return Internal
}

// Message returns the caller-safe message of err: the Msg of the first *Error
// in its chain, or a generic sentence for anything else.
func Message(err error) string {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Msg
	}
	return "internal error"
}

// Is reports whether err carries the given code.
func Is(err error, code Code) bool { return CodeOf(err) == code }

// Wrap annotates *errp with context when it is non-nil, keeping the chain:
//
//	defer fault.Wrap(&err, "get agent %s", id)
func Wrap(errp *error, format string, args ...any) {
	if *errp != nil {
		*errp = fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), *errp)
	}
}
