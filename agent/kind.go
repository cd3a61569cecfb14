package agent

import "fmt"

// ToolKind is what a tool call does, as far as the session state machine is
// concerned (docs/ASSISTANT_SAFETY.md#tool-kinds).
type ToolKind int

// Tool kinds. The zero value is KindResolve; classification never relies on
// the zero value: unknown calls are KindWrite.
const (
	KindResolve ToolKind = iota
	KindRead
	KindWrite
	KindUserInput
)

// kindNames are the wire names of the tool kinds.
var kindNames = [...]string{
	KindResolve:   "resolve",
	KindRead:      "read",
	KindWrite:     "write",
	KindUserInput: "user_input",
}

// String returns "resolve", "read", "write" or "user_input".
func (k ToolKind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("ToolKind(%d)", int(k))
	}
	return kindNames[k]
}

// Valid reports whether k is one of the declared kinds.
func (k ToolKind) Valid() bool { return k >= 0 && int(k) < len(kindNames) }

// ParseToolKind is the inverse of String.
func ParseToolKind(s string) (ToolKind, error) {
	for i, name := range kindNames {
		if name == s {
			return ToolKind(i), nil
		}
	}
	return KindWrite, fmt.Errorf("unknown tool kind %q", s)
}

// MarshalText encodes the kind as its name.
func (k ToolKind) MarshalText() ([]byte, error) {
	if !k.Valid() {
		return nil, fmt.Errorf("invalid tool kind %d", int(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText decodes a kind name.
func (k *ToolKind) UnmarshalText(b []byte) error {
	v, err := ParseToolKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// Kinds returns every tool kind in declaration order.
func Kinds() []ToolKind {
	out := make([]ToolKind, len(kindNames))
	for i := range kindNames {
		out[i] = ToolKind(i)
	}
	return out
}

// WriteTarget says what a write changes.
type WriteTarget string

// Write targets. Writes to patrol_state (filing or assessing a finding) are
// still writes for classification and budgets, but they do not move the
// state machine: they change nothing outside patrold.
const (
	TargetInfrastructure WriteTarget = "infrastructure"
	TargetPatrolState    WriteTarget = "patrol_state"
)

// writeTargets lists the valid write targets.
var writeTargets = []WriteTarget{TargetInfrastructure, TargetPatrolState}

// Status is the outcome of one tool call in a step record (docs/ASSISTANT.md#transcript).
type Status string

// Step statuses.
const (
	StatusOK               Status = "ok"
	StatusBlocked          Status = "blocked"
	StatusError            Status = "error"
	StatusSkipped          Status = "skipped"
	StatusApprovalRequired Status = "approval_required"
)

// statuses is the closed set of step statuses (metric labels).
var statuses = []Status{StatusOK, StatusBlocked, StatusError, StatusSkipped, StatusApprovalRequired}

// statusFor maps a refusal or handler code to a step status.
func statusFor(c Code) Status {
	switch c {
	case CodeApprovalRequired:
		return StatusApprovalRequired
	case CodeSkipped:
		return StatusSkipped
	case CodeFSMBlocked, CodeLoopDetected, CodeToolNotAdvertised, CodeUnknownTool,
		CodeBudgetExhausted, CodeLookFirst, CodePolicyBlocked:
		return StatusBlocked
	case CodeNotFound, CodeInvalidInput, CodeExecutionFailed, CodeTimeout:
		return StatusError
	}
	return StatusError
}
