package model

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"unicode/utf8"
)

// ErrorKind classifies a provider failure for retry and circuit decisions.
type ErrorKind string

// Error kinds. Transient failures (429, 5xx, timeouts, connection errors)
// count towards the circuit breaker; the others do not.
const (
	ErrorTransient  ErrorKind = "transient"
	ErrorAuth       ErrorKind = "auth"
	ErrorBadRequest ErrorKind = "bad_request"
	ErrorCanceled   ErrorKind = "canceled"
	// ErrorMalformed is a 2xx answer that could not be understood
	// (not JSON, no choices, an unknown block). It counts like a transient
	// failure: the server is misbehaving.
	ErrorMalformed ErrorKind = "malformed_response"
)

// Sentinels.
var (
	// ErrCircuitOpen is returned, wrapped in an *Error, while a breaker
	// refuses calls.
	ErrCircuitOpen = errors.New("circuit open")
)

const (
	redactedMarker  = "[redacted]"
	maxErrorMessage = 512
)

// Error is a classified provider failure. Its text never contains an API
// key: providers build it with Redact.
type Error struct {
	Provider string
	Kind     ErrorKind
	Status   int // HTTP status when there was one
	Err      error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("model ")
	b.WriteString(e.Provider)
	b.WriteString(": ")
	b.WriteString(string(e.Kind))
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of err: the Kind of an *Error in its chain,
// ErrorCanceled for context cancellation, else ErrorTransient.
func KindOf(err error) ErrorKind {
	var me *Error
	if errors.As(err, &me) {
		return me.Kind
	}
	if errors.Is(err, context.Canceled) {
		return ErrorCanceled
	}
	return ErrorTransient
}

// KindForStatus classifies an HTTP status.
func KindForStatus(status int) ErrorKind {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return ErrorAuth
	case status == http.StatusTooManyRequests || status == http.StatusRequestTimeout ||
		status == http.StatusConflict || status >= http.StatusInternalServerError:
		return ErrorTransient
	case status >= http.StatusBadRequest:
		return ErrorBadRequest
	}
	return ErrorMalformed
}

// ClassifyTransport classifies an error that came without an HTTP answer.
// ctx is the caller's context. When it is done, the call was canceled by
// the caller (a run timeout included). A per-attempt timeout, a network
// timeout or a refused connection is transient.
func ClassifyTransport(ctx context.Context, err error) ErrorKind {
	if ctx.Err() != nil {
		return ErrorCanceled
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne):
		return ErrorTransient
	case errors.Is(err, context.Canceled):
		return ErrorCanceled
	}
	return ErrorTransient
}

// Redact removes every secret from s, bounds its length and drops control
// characters, so the result can go into an error or a log line.
func Redact(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, redactedMarker)
		}
	}
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return ' '
		}
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return -1
		}
		return r
	}, s)
	if len(s) > maxErrorMessage {
		cut := maxErrorMessage
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

// NewError builds a provider error whose text is msg with the secrets
// redacted. When cause is a context error it stays in the chain so callers
// can test errors.Is(err, context.Canceled); any other cause is replaced by
// its redacted text.
func NewError(provider string, kind ErrorKind, status int, msg string, cause error, secrets ...string) *Error {
	text := Redact(msg, secrets...)
	var inner error
	switch {
	case errors.Is(cause, context.Canceled):
		inner = fmt.Errorf("%s: %w", text, context.Canceled)
	case errors.Is(cause, context.DeadlineExceeded):
		inner = fmt.Errorf("%s: %w", text, context.DeadlineExceeded)
	default:
		inner = errors.New(text)
	}
	return &Error{Provider: provider, Kind: kind, Status: status, Err: inner}
}
