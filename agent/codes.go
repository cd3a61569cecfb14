package agent

import (
	"errors"
	"fmt"
)

// Code is a structured error code the agent runtime returns to the model
// inside a JSON tool result (docs/ASSISTANT_SAFETY.md#error-codes). Every code is declared in
// this file and nowhere else; a contract test parses the package and fails
// when code elsewhere emits a code string that is not declared here, or when
// a code declared here is never used.
type Code string

// Declared codes.
const (
	CodeFSMBlocked        Code = "FSM_BLOCKED"
	CodeLoopDetected      Code = "LOOP_DETECTED"
	CodeToolNotAdvertised Code = "TOOL_NOT_ADVERTISED"
	CodeUnknownTool       Code = "UNKNOWN_TOOL"
	CodeMalformedToolCall Code = "MALFORMED_TOOL_CALL"
	CodeNoSuchPlaceholder Code = "UNKNOWN_PLACEHOLDER"
	CodeInvalidInput      Code = "INVALID_INPUT"
	CodeNotFound          Code = "NOT_FOUND"
	CodeApprovalRequired  Code = "APPROVAL_REQUIRED"
	CodePolicyBlocked     Code = "POLICY_BLOCKED"
	CodeExecutionFailed   Code = "EXECUTION_FAILED"
	CodeTimeout           Code = "TIMEOUT"
	CodeBudgetExhausted   Code = "BUDGET_EXHAUSTED"
	CodeSkipped           Code = "SKIPPED"
	CodeLookFirst         Code = "LOOK_FIRST"
	CodeTargetUnresolved  Code = "TARGET_UNRESOLVED"
)

// codeCatalogue describes every declared code, in manifest order. It is part
// of the declaration: the contract test does not count it as a use.
var codeCatalogue = []CodeInfo{
	{CodeFSMBlocked, "the session state machine refused the call (e.g. a write before verifying the previous one)", false},
	{CodeLoopDetected, "the same call with the same arguments was repeated too often since the last write", false},
	{CodeToolNotAdvertised, "the tool is not offered in this session's profile or this turn", false},
	{CodeUnknownTool, "no tool of that name is registered", false},
	{CodeMalformedToolCall, "the call's arguments are not one complete JSON object (cut off or malformed JSON): send it again whole", false},
	{CodeNoSuchPlaceholder, "the arguments name a placeholder (model.mask_names) that no message of this session carried", false},
	{CodeInvalidInput, "the arguments do not match the tool's JSON schema or were rejected by the tool", true},
	{CodeNotFound, "the tool could not find the object it was asked about", true},
	{CodeApprovalRequired, "the write waits for an operator approval", false},
	{CodePolicyBlocked, "the write is forbidden by policy (resource kind, signal, autonomy level, action risk, condition not present, already executed); a handler may return it to refuse a write to patrold's own state", true},
	{CodeExecutionFailed, "the tool ran and failed", true},
	{CodeTimeout, "the tool did not finish within its timeout", true},
	{CodeBudgetExhausted, "the session's call or model budget is spent", false},
	{CodeSkipped, "the call was not run because an operator question in the same turn runs alone", false},
	{CodeLookFirst, "ask the operator only after trying a real tool", false},
	{CodeTargetUnresolved, "the write's target has not been resolved live in this session: call the resolve tool first", false},
}

// CodeInfo describes one declared code.
type CodeInfo struct {
	Code        Code   `json:"code"`
	Description string `json:"description"`
	// FromHandler is true when a tool handler may return the code itself.
	FromHandler bool `json:"from_handler"`
}

// Codes returns every declared code, in manifest order.
func Codes() []CodeInfo {
	out := make([]CodeInfo, len(codeCatalogue))
	copy(out, codeCatalogue)
	return out
}

// handlerMayReturn reports whether c is a declared code a handler may return.
func handlerMayReturn(c Code) bool {
	for _, info := range codeCatalogue {
		if info.Code == c {
			return info.FromHandler
		}
	}
	return false
}

// ToolError is an error carrying a structured code. Handlers return it to
// report NOT_FOUND, INVALID_INPUT, EXECUTION_FAILED or TIMEOUT; the runtime
// uses it for its own refusals. Any other error from a handler, including a
// ToolError carrying a runtime-only code (FSM_BLOCKED, APPROVAL_REQUIRED,
// LOOP_DETECTED, TOOL_NOT_ADVERTISED, ...) or an *FSMBlockedError, reaches the model as
// EXECUTION_FAILED: a handler cannot impersonate the runtime.
type ToolError struct {
	Code    Code           `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	// Err is an optional cause; it is not sent to the model.
	Err error `json:"-"`
}

// NewToolError returns a ToolError with a formatted message.
func NewToolError(code Code, format string, args ...any) *ToolError {
	return &ToolError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error implements error.
func (e *ToolError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap returns the cause.
func (e *ToolError) Unwrap() error { return e.Err }

// With returns e with one detail added.
func (e *ToolError) With(key string, value any) *ToolError {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// codeOf extracts the structured code of a handler's error: only declared
// handler codes pass; anything else becomes EXECUTION_FAILED.
func codeOf(err error) Code {
	var te *ToolError
	if errors.As(err, &te) && handlerMayReturn(te.Code) {
		return te.Code
	}
	return CodeExecutionFailed
}
