// Package records holds the values the store's methods take and return
// for sessions, approvals, the audit log and retention: plain types with
// no SQL, so the packages that consume a store (patrol, api, assistant)
// declare their interfaces without linking the SQLite driver.
package records

import (
	"encoding/json"
	"time"
)

// SessionRecord is one stored remediation session. Transcript is the JSON
// the assistant stored when the session finished ("" while it runs).
type SessionRecord struct {
	ID         string
	FindingID  string
	Attempt    int
	Driver     string
	Outcome    string
	Summary    string
	StartedAt  time.Time
	FinishedAt *time.Time
	Transcript string
}

// SessionEnd is how a session ended: its outcome and transcript, the model
// exchange recorded so far ("" keeps the stored one) and what this stretch
// of the session cost (added to what it cost before).
type SessionEnd struct {
	Outcome    string
	Summary    string
	FinishedAt time.Time
	Transcript []byte
	Exchange   []byte
	CostUSD    float64
}

// ApprovalRecord is one stored write approval with the parked session it
// resumes: the session's state machine snapshot, transcript and
// conversation, kept as the JSON the assistant encoded.
type ApprovalRecord struct {
	ID         string
	FindingID  string
	SessionID  string
	Attempt    int
	ResourceID string
	Action     string
	Args       json.RawMessage
	Risk       string
	State      string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	DecidedAt  *time.Time
	DecidedBy  string
	Driver     string
	Autonomy   string
	StartedAt  time.Time
	Turns      int
	FSM        json.RawMessage
	Transcript json.RawMessage
	Messages   json.RawMessage
	Reason     string
}

// AuditEvent is one audited mutating API call. It never holds the token,
// only its name and TokenID.
type AuditEvent struct {
	At         time.Time `json:"at"`
	TokenName  string    `json:"token_name"`
	TokenID    string    `json:"token_id"`
	Method     string    `json:"method"`
	Path       string    `json:"path"`
	Route      string    `json:"route"`
	TargetKind string    `json:"target_kind,omitempty"`
	TargetID   string    `json:"target_id,omitempty"`
	Action     string    `json:"action,omitempty"`
	Status     int       `json:"status"`
	ErrorCode  string    `json:"error_code,omitempty"`
	RemoteAddr string    `json:"remote_addr,omitempty"`
}

// Pruned counts the rows a prune deleted, by table.
type Pruned map[string]int64

// PruneTables lists the tables a prune sweeps, in order (metrics
// pre-create them); the store's prune holds one condition per table.
var PruneTables = []string{"runs", "audit_events", "investigations", "remediation_sessions", "approvals", "silences"}
