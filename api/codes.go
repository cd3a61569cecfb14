package api

import (
	"fmt"
	"net/http"
)

// Code is a stable API error code: the "error" field of every error body.
// Every code the API emits is declared in this file and nowhere else; a
// contract test parses the package and fails on an undeclared code literal
// or on a declared code that no handler emits.
type Code string

// Declared codes (docs/API.md#error-codes, the generic HTTP ones included).
const (
	CodeFindingNotFound         Code = "finding_not_found"
	CodeFindingActionNotAllowed Code = "finding_action_not_allowed"
	CodePatrolAlreadyRunning    Code = "patrol_already_running"
	CodeApprovalNotFound        Code = "approval_not_found"
	CodeApprovalExpired         Code = "approval_expired"
	CodeApprovalDecided         Code = "approval_already_decided"
	CodeInvalidRequest          Code = "invalid_request"
	CodeUnauthorized            Code = "unauthorized"
	CodeForbidden               Code = "forbidden"
	CodeAuthThrottled           Code = "auth_throttled"
	CodeNotFound                Code = "not_found"
	CodeMethodNotAllowed        Code = "method_not_allowed"
	CodeNotReady                Code = "not_ready"
	CodeNotDurable              Code = "not_durable"
	CodeReloadFailed            Code = "reload_failed"
	CodeInternal                Code = "internal"
)

// CodeInfo describes one declared code.
type CodeInfo struct {
	Code        Code   `json:"code"`
	Status      int    `json:"status"`
	Description string `json:"description"`
}

// codeCatalogue is part of the declaration, in documentation order.
var codeCatalogue = []CodeInfo{
	{CodeFindingNotFound, http.StatusNotFound, "no finding has that id"},
	{CodeFindingActionNotAllowed, http.StatusConflict, "the operator action does not apply in the finding's current state"},
	{CodePatrolAlreadyRunning, http.StatusConflict, "a patrol run holds the run lock; current_run_id names it"},
	{CodeApprovalNotFound, http.StatusNotFound, "no pending approval has that id"},
	{CodeApprovalExpired, http.StatusConflict, "the approval passed its time to live before it was decided"},
	{CodeApprovalDecided, http.StatusConflict, "the approval was already approved or denied"},
	{CodeInvalidRequest, http.StatusBadRequest, "the query, path or body is invalid; details.field names the field (413 when the body is too large)"},
	{CodeUnauthorized, http.StatusUnauthorized, "no bearer token, an unknown token, or a mutation while no token is configured"},
	{CodeForbidden, http.StatusForbidden, "the token is valid but its scope does not allow the call"},
	{CodeAuthThrottled, http.StatusTooManyRequests, "too many failed tokens from this client address; any token is refused until Retry-After (details.retry_after_seconds) has passed"},
	{CodeNotFound, http.StatusNotFound, "no such route, run or silence"},
	{CodeMethodNotAllowed, http.StatusMethodNotAllowed, "the route exists but not for this method; the Allow header lists the methods"},
	{CodeNotReady, http.StatusServiceUnavailable, "the daemon is not ready to serve (readyz)"},
	{CodeNotDurable, http.StatusServiceUnavailable, "cluster mode: the change is committed on the writer but the stream did not store it in time; details.will_publish says whether it is still on its way, details.answer holds the answer held back"},
	{CodeReloadFailed, http.StatusInternalServerError, "the configuration reload failed; the previous configuration stays in force"},
	{CodeInternal, http.StatusInternalServerError, "an unexpected server error; the log has the cause"},
}

// Codes returns every declared code, for the capability manifest and docs.
func Codes() []CodeInfo {
	out := make([]CodeInfo, len(codeCatalogue))
	copy(out, codeCatalogue)
	return out
}

// Error is an API error: the server writes it as the error body and the
// Client returns it for every non-2xx answer.
type Error struct {
	Status  int            `json:"-"`
	Code    Code           `json:"error"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
	// CurrentRunID is set with patrol_already_running (also in Details).
	CurrentRunID string `json:"current_run_id,omitempty"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("api %d %s: %s", e.Status, e.Code, e.Message)
}

// newError builds an Error with the status the catalogue gives code.
func newError(code Code, format string, args ...any) *Error {
	status := http.StatusInternalServerError
	for _, c := range codeCatalogue {
		if c.Code == code {
			status = c.Status
			break
		}
	}
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...), Details: map[string]any{}}
}

// with adds one detail.
func (e *Error) with(key string, value any) *Error {
	e.Details[key] = value
	return e
}

// invalid is an invalid_request naming field.
func invalid(field, format string, args ...any) *Error {
	return newError(CodeInvalidRequest, "%s: %s", field, fmt.Sprintf(format, args...)).with("field", field)
}
