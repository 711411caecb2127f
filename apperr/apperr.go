// Package apperr defines the one error type that crosses package boundaries
// in DDS. Every error a user may see is an *Error with a Code; the HTTP layer
// (api.WriteError) maps codes to statuses and the JSON envelope in one place.
// Internal causes are kept in Err and never rendered to clients.
package apperr

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code.
type Code string

// The complete set of error codes DDS returns.
const (
	Validation      Code = "VALIDATION_ERROR"  // 400
	BadRequest      Code = "BAD_REQUEST"       // 400
	Unauthenticated Code = "UNAUTHORIZED"      // 401
	Forbidden       Code = "FORBIDDEN"         // 403
	NotFound        Code = "NOT_FOUND"         // 404
	Conflict        Code = "CONFLICT"          // 409
	CursorExpired   Code = "CURSOR_EXPIRED"    // 410: an events cursor older than retention
	TooLarge        Code = "PAYLOAD_TOO_LARGE" // 413
	RateLimited     Code = "RATE_LIMITED"      // 429
	Unavailable     Code = "UNAVAILABLE"       // 503
	// QueryTooExpensive: the plan's estimate is above the row budget.
	QueryTooExpensive Code = "QUERY_TOO_EXPENSIVE" // 400
	// QueryTimeout: a statement ran past the statement timeout.
	QueryTimeout Code = "QUERY_TIMEOUT" // 503
	// IdempotencyKeyReused: an Idempotency-Key sent again with another
	// method, path or body.
	IdempotencyKeyReused Code = "IDEMPOTENCY_KEY_REUSED" // 422
	Internal             Code = "INTERNAL_ERROR"         // 500
)

// FieldError names one invalid input field.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is the public error value.
type Error struct {
	Code    Code
	Message string
	Details []FieldError
	// Extra is rendered as additional members of the error object (for
	// example a destructive-change plan on a 409). Must be JSON-safe.
	Extra map[string]any
	// Err is the internal cause; logged, never shown.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// New builds an error with a code and message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Field builds a VALIDATION_ERROR naming one field.
func Field(field, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{Code: Validation, Message: field + ": " + msg, Details: []FieldError{{Field: field, Message: msg}}}
}

// Fields builds a VALIDATION_ERROR from several field errors; nil if none.
func Fields(details []FieldError) *Error {
	if len(details) == 0 {
		return nil
	}
	msg := details[0].Field + ": " + details[0].Message
	if len(details) > 1 {
		msg = fmt.Sprintf("%s (and %d more)", msg, len(details)-1)
	}
	return &Error{Code: Validation, Message: msg, Details: details}
}

// Wrap marks err as an internal error with a public message.
func Wrap(err error, format string, args ...any) *Error {
	return &Error{Code: Internal, Message: fmt.Sprintf(format, args...), Err: err}
}

// As returns err as *Error, wrapping unknown errors as Internal.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: Internal, Message: "internal error", Err: err}
}

// Is reports whether err is an *Error with the given code.
func Is(err error, code Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}
