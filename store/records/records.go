// Package records holds the values the store's methods take and return
// for sessions, approvals, the audit log, retention and replication. They
// are plain types with no SQL. So the packages that consume a store
// (patrol, api, assistant) declare their interfaces without linking the
// SQLite driver, and so does the cluster package.
package records

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/patrold/patrold/model/prompt"
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
	// Reason is the model's reason, made safe (a prompt.Text).
	Reason prompt.Text
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

// ReplicaStatus is what a replica has applied.
type ReplicaStatus struct {
	AppliedSeq    uint64
	AppliedAt     *time.Time
	AppliedOrigin string // who wrote the last change applied
	AppliedEpoch  uint64 // the highest writer epoch applied
	Fenced        uint64 // changes ignored as a deposed writer's
	// OwnSince is the first epoch whose changes of this instance's own
	// its rows hold (raised by a re-seed); a new tenure starts at it.
	OwnSince uint64
}

// Divergence says that this database holds rows the state stream never
// got: a writer restarted with unsent state changes after another
// instance wrote. Its outbox rows were dropped; its own rows stay until
// it is re-seeded from a caught-up instance.
type Divergence struct {
	Since      time.Time    `json:"since"`
	LastWriter string       `json:"last_writer"` // the instance that wrote since
	Count      int          `json:"count"`       // outbox events dropped
	Rows       []DroppedRow `json:"rows"`        // the first MaxDroppedRows of them
	// Fenced counts this instance's own changes that the stream got but
	// every replica fenced (it wrote as a deposed writer, e.g. frozen and
	// resumed); FencedRows names the first MaxDroppedRows of them.
	Fenced     int          `json:"fenced,omitempty"`
	FencedRows []DroppedRow `json:"fenced_rows,omitempty"`
}

// MaxDroppedRows bounds the dropped rows a Divergence lists.
const MaxDroppedRows = 100

// DroppedRow is one outbox event dropped for a divergence. Kind is the
// state change's "table op" or the event type; ID the changed row's id
// (its rowid when it has no id column) or the event's resource.
type DroppedRow struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// Diverged reports whether the database holds rows the stream lacks.
func (d Divergence) Diverged() bool { return d.LastWriter != "" }

// Apply is what ApplyState did with a change.
type Apply int

// ApplyState results.
const (
	// ApplySkipped: the sequence was applied before (a redelivery).
	ApplySkipped Apply = iota
	// Applied: the change is in (or, written by self, already was).
	Applied
	// ApplyFenced: the change came from a writer of a lower epoch than one
	// already applied (deposed): only the sequence advanced.
	ApplyFenced
	// ApplyDuplicate: the change's number was applied before, in its
	// epoch (a change its writer published again): only the sequence
	// advanced.
	ApplyDuplicate
	// ApplyFencedOwn: fenced, and this database captured the change (it
	// wrote as a deposed writer): recorded as a divergence.
	ApplyFencedOwn
)

// GapError: the change at stream sequence Seq is number Got, but the
// database applied up to Want-1: the changes between are no longer on the
// stream (aged out by nats.stream.max_age or max_bytes before this replica
// read them). Nothing is applied; the replica must be re-seeded.
type GapError struct {
	Seq       uint64
	Want, Got uint64
}

func (e *GapError) Error() string {
	return fmt.Sprintf("state changes %d..%d are missing from the stream (next on it: %d at seq %d): this database cannot catch up; re-seed it (patrold db seed)",
		e.Want, e.Got-1, e.Got, e.Seq)
}
