package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The cluster's wire: the names and bodies instances of one cluster
// exchange over NATS. Every subject here is core NATS request/reply
// outside the patrol stream's `<prefix>.>`, except the state changes,
// which travel in the stream. See docs/CLUSTER.md.

// Defaults of the `nats:` section that name things on the wire.
const (
	// DefaultSubjectPrefix is the first token of every published subject.
	DefaultSubjectPrefix = "patrol"
	// DefaultStreamName is the JetStream stream capturing `<prefix>.>`.
	DefaultStreamName = "PATROL"
	// DefaultLeaseBucket is the KV bucket holding the leader lease.
	DefaultLeaseBucket = "patrold_leader"
)

// ValidToken reports whether s is usable as one NATS subject token, a
// stream name or a KV bucket name: non-empty, letters, digits, '-' and '_'.
func ValidToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		ok := r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}

// The first tokens of the cluster's request/reply subjects.
const (
	StemForward  = "patrold_api"
	StemSeed     = "patrold_seed"
	StemSessions = "patrold_sessions"
)

// SignedSubjects are the state-changing subjects every message of which
// is signed with the deployment key and refused unless it verifies
// (docs/NATS.md, trust boundaries): the stream's relative subjects and
// the request/reply stems. Each is a subject label of
// patrold_bus_refused_total.
var SignedSubjects = []string{SubjectRemediationRequests, SubjectRemediationOutcomes, SubjectStateChanges,
	StemSessions, StemForward, StemSeed, StemTrigger}

// ForwardSubject is the request/reply subject of API calls a standby
// forwards to the writer.
func ForwardSubject(prefix string) string { return "patrold_api." + prefix }

// ForwardRequest is an API request sent to the writer.
type ForwardRequest struct {
	Method string              `json:"method"`
	URI    string              `json:"uri"`
	Header map[string][]string `json:"header"`
	Body   []byte              `json:"body"`
}

// ForwardResponse is the writer's answer to a ForwardRequest.
type ForwardResponse struct {
	Status int                 `json:"status"`
	Header map[string][]string `json:"header"`
	Body   []byte              `json:"body"`
}

// Seeding (`patrold db seed`).
const (
	// SeedBucket is the object store bucket a seed copy is uploaded to.
	SeedBucket = "patrold_seed"
	// SeedQueue is the queue group seed requests are answered in.
	SeedQueue = "patrold-seed"
)

// SeedSubject is the request/reply subject of seed requests.
func SeedSubject(prefix string) string { return "patrold_seed." + prefix }

// SeedOfferSubject is where an asker first finds an instance able to
// serve a copy now: each such instance answers; one that hangs cannot.
func SeedOfferSubject(prefix string) string { return SeedSubject(prefix) + ".offer" }

// SeedToSubject is the seed request subject of one instance, asked after
// it offered.
func SeedToSubject(prefix, instance string) string { return SeedSubject(prefix) + ".to." + instance }

// Seed is the answer to a seed request.
type Seed struct {
	Object     string `json:"object"`
	Origin     string `json:"origin"`
	AppliedSeq uint64 `json:"applied_seq"`
	Bytes      int64  `json:"bytes"`
	// SHA256 is the hex SHA-256 of the copy: the answer is signed with
	// the deployment key, so the copy downloaded must hash to it.
	SHA256 string `json:"sha256,omitempty"`
	// Signer is the id of the deployment key the answer is signed with.
	Signer string `json:"signer,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Session calls: a standalone assistant worker keeps its sessions in the
// writer's store through these methods, the last token of the subject
// `SessionsSubject(prefix).<method>`.
const (
	// SessionsService is the micro service name (`nats micro ls` shows it).
	SessionsService = "patrold-sessions"
	// SessionsQueue: one writer answers each call.
	SessionsQueue = "patrold-writer"

	SessionMethodGet              = "get"
	SessionMethodStartSession     = "start_session"
	SessionMethodFinishSession    = "finish_session"
	SessionMethodSession          = "session"
	SessionMethodLastSession      = "last_session"
	SessionMethodSessionCost      = "session_cost"
	SessionMethodSessionSpent     = "session_spent"
	SessionMethodRunSpent         = "run_spent"
	SessionMethodSessionExchange  = "session_exchange"
	SessionMethodInsertApproval   = "insert_approval"
	SessionMethodApproval         = "approval"
	SessionMethodPendingApprovals = "pending_approvals"
	SessionMethodFindingApprovals = "finding_approvals"
	SessionMethodDueApprovals     = "due_approvals"
	SessionMethodDecideApproval   = "decide_approval"
)

// SessionsSubject is the subject the session methods live under.
func SessionsSubject(prefix string) string { return "patrold_sessions." + prefix }

// State changes: the writer's committed row changes, published in the
// patrol stream and applied by every standby.
const (
	// SubjectStateChanges is the relative subject of state-change events.
	SubjectStateChanges = "state.changes"
	// TypeStateChange is the CloudEvents (and outbox) type of a state change.
	TypeStateChange = "patrold.state.change"
)

// StateChange is one replicated row change, the data of a state-change
// event: Op "upsert" carries the whole row (replicated columns and its
// rowid), "delete" the rowid of the row deleted.
//
// Epoch is the capturing writer's epoch (the leader lease revision it took
// the lease at). Op "epoch" is a new writer's marker, its first change:
// no row, table "-"; from it on, a replica ignores changes of any lower
// epoch (fencing a deposed writer).
//
// N numbers the captured changes without a gap across writers (0: not
// numbered, an epoch marker); a replica applies change N only after N-1.
type StateChange struct {
	Origin string                     `json:"origin"`
	Epoch  uint64                     `json:"epoch,omitempty"`
	N      uint64                     `json:"n,omitempty"`
	Table  string                     `json:"table"`
	Op     string                     `json:"op"`
	RowID  int64                      `json:"rowid"`
	Row    map[string]json.RawMessage `json:"row,omitempty"`
	// Republished is never on the wire in the body: a replica sets it
	// from the signed HeaderRepublished. Only such a change may be
	// skipped as a number applied before.
	Republished bool `json:"-"`
}

// HeaderRepublished marks a state change its writer published again
// after the stream lost it; its value is the change number. Signed like
// every Patrold- header.
const HeaderRepublished = "Patrold-Republished"

// The ops of a row change: OpUpsert carries the whole row, OpDelete only
// the rowid of the row deleted.
const (
	OpUpsert = "upsert"
	OpDelete = "delete"
)

// OpEpoch is the op of a new writer's epoch marker.
const OpEpoch = "epoch"

// OpTouch is a re-detection of many unchanged findings in one change. Its
// table is "findings", its row {"raised": {id: times raised, ...},
// "last_seen_at": T, "last_run_id": R}. Applying it runs the writer's own
// update on those findings: last seen, last run, and each finding's times
// raised as the writer decided it.
const OpTouch = "touch"

// SkipTable is the table of a change that only advances the applied
// sequence (an epoch marker, a refused one).
const SkipTable = "-"

// SkipChange is the change a replica records for a refused message: the
// sequence advances, nothing else changes.
func SkipChange(self string) StateChange {
	return StateChange{Origin: self, Table: SkipTable, Op: OpDelete}
}

// DecodeStateChange decodes a state-change event's data, naming the field
// that is wrong.
func DecodeStateChange(data []byte) (StateChange, error) {
	var c StateChange
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return StateChange{}, fmt.Errorf("state change: %w", err)
	}
	switch {
	case c.Origin == "":
		return StateChange{}, errors.New("state change: origin is required")
	case c.Table == "":
		return StateChange{}, errors.New("state change: table is required")
	case c.Op == OpEpoch && (c.Epoch == 0 || c.Table != SkipTable || len(c.Row) != 0):
		return StateChange{}, errors.New("state change: an epoch marker needs epoch > 0, table \"-\" and no row")
	case c.Op == OpEpoch:
		return c, nil
	case c.Op == OpTouch:
		if err := validTouch(c); err != nil {
			return StateChange{}, err
		}
		return c, nil
	case c.Op != OpUpsert && c.Op != OpDelete:
		return StateChange{}, fmt.Errorf("state change: op %q is not upsert, delete, epoch or touch", c.Op)
	case c.Op == OpUpsert && len(c.Row) == 0:
		return StateChange{}, errors.New("state change: row is required for upsert")
	case c.Op == OpDelete && len(c.Row) != 0:
		return StateChange{}, errors.New("state change: row must be empty for delete")
	}
	return c, nil
}

// validTouch checks a touch change's table and row, naming the field.
func validTouch(c StateChange) error {
	if c.Table != "findings" {
		return fmt.Errorf("state change: a touch is of table findings, not %q", c.Table)
	}
	if len(c.Row) != 3 {
		return errors.New("state change: a touch row holds exactly raised, last_seen_at and last_run_id")
	}
	var raised map[string]int64
	if err := json.Unmarshal(c.Row["raised"], &raised); err != nil || len(raised) == 0 {
		return errors.New("state change: row.raised must be a non-empty object of finding ids and times raised")
	}
	for id, n := range raised {
		if id == "" || n < 1 {
			return fmt.Errorf("state change: row.raised[%q] must be a finding id raised at least once, got %d", id, n)
		}
	}
	for _, k := range []string{"last_seen_at", "last_run_id"} {
		var v string
		if err := json.Unmarshal(c.Row[k], &v); err != nil || v == "" {
			return fmt.Errorf("state change: row.%s must be a non-empty string", k)
		}
	}
	return nil
}
