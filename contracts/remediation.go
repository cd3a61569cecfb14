package contracts

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Outcome is how a remediation session ended (docs/FINDINGS.md#loop-states).
type Outcome string

// Session outcomes: the one place they are spelled. The findings package
// records them as investigation outcomes and mirrors these constants.
const (
	OutcomeFixVerified            Outcome = "fix_verified"
	OutcomeFixQueued              Outcome = "fix_queued"
	OutcomeFixFailed              Outcome = "fix_failed"
	OutcomeFixVerificationFailed  Outcome = "fix_verification_failed"
	OutcomeFixVerificationUnknown Outcome = "fix_verification_unknown"
	OutcomeCannotFix              Outcome = "cannot_fix"
	OutcomeNeedsAttention         Outcome = "needs_attention"
	OutcomeTimedOut               Outcome = "timed_out"
	OutcomeFixRejected            Outcome = "fix_rejected"
	OutcomeFixExecuted            Outcome = "fix_executed"
)

// Outcomes lists every outcome.
var Outcomes = []Outcome{
	OutcomeFixVerified, OutcomeFixQueued, OutcomeFixFailed, OutcomeFixVerificationFailed,
	OutcomeFixVerificationUnknown, OutcomeCannotFix, OutcomeNeedsAttention, OutcomeTimedOut,
	OutcomeFixRejected, OutcomeFixExecuted,
}

// Valid reports whether o is a known outcome.
func (o Outcome) Valid() bool { return oneOf(o, Outcomes) }

// Driver is what drove a session.
type Driver string

// Session drivers.
const (
	DriverModel    Driver = "model"
	DriverPlaybook Driver = "playbook"
)

// Categories a finding may have (docs/FINDINGS.md).
var Categories = []string{"performance", "capacity", "reliability", "backup", "security", "general"}

// Autonomy levels that may request remediation (`monitor` never does).
var RequestAutonomies = []string{"approval", "assisted", "full"}

const findingIDLen = 16

// RemediationRequest hands a finding that passed the investigation gate to
// an assistant worker. The patrol side writes it to the outbox.
type RemediationRequest struct {
	FindingID   string    `json:"finding_id"`
	ResourceID  string    `json:"resource_id"`
	Category    string    `json:"category"`
	Key         string    `json:"key"`
	Severity    string    `json:"severity"`
	Title       string    `json:"title"`
	Autonomy    string    `json:"autonomy"`
	Attempt     int       `json:"attempt"`
	RunID       string    `json:"run_id"`
	RequestedAt time.Time `json:"requested_at"`
	// Epoch is the dispatching writer's epoch (0 on a single instance);
	// the session's outcome carries it back.
	Epoch uint64 `json:"epoch,omitempty"`
}

// RemediationOutcome reports how a session for a finding ended.
type RemediationOutcome struct {
	SessionID  string    `json:"session_id"`
	FindingID  string    `json:"finding_id"`
	Attempt    int       `json:"attempt"`
	Outcome    Outcome   `json:"outcome"`
	Driver     Driver    `json:"driver"`
	Summary    string    `json:"summary"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	// Epoch is the epoch of the request the session answers.
	Epoch uint64 `json:"epoch,omitempty"`
}

// Validate checks every field, naming the first bad one.
func (r *RemediationRequest) Validate() error {
	switch {
	case !validFindingID(r.FindingID):
		return fmt.Errorf("finding_id: must be %d lower-case hex characters, got %s", findingIDLen, truncate(r.FindingID, 40))
	case r.ResourceID == "":
		return errors.New("resource_id: required")
	case !oneOf(r.Category, Categories):
		return fmt.Errorf("category: %s is not one of %v", truncate(r.Category, 40), Categories)
	case r.Key == "":
		return errors.New("key: required")
	case !validSeverity(r.Severity):
		return fmt.Errorf("severity: %s is not one of %v", truncate(r.Severity, 40), Severities)
	case r.Title == "":
		return errors.New("title: required")
	case !oneOf(r.Autonomy, RequestAutonomies):
		return fmt.Errorf("autonomy: %s is not one of %v", truncate(r.Autonomy, 40), RequestAutonomies)
	case r.Attempt < 1:
		return fmt.Errorf("attempt: must be at least 1, got %d", r.Attempt)
	case r.RunID == "":
		return errors.New("run_id: required")
	case r.RequestedAt.IsZero():
		return errors.New("requested_at: required")
	}
	return nil
}

// Validate checks every field, naming the first bad one.
func (o *RemediationOutcome) Validate() error {
	switch {
	case o.SessionID == "":
		return errors.New("session_id: required")
	case !validFindingID(o.FindingID):
		return fmt.Errorf("finding_id: must be %d lower-case hex characters, got %s", findingIDLen, truncate(o.FindingID, 40))
	case o.Attempt < 1:
		return fmt.Errorf("attempt: must be at least 1, got %d", o.Attempt)
	case !o.Outcome.Valid():
		return fmt.Errorf("outcome: %s is not one of %v", truncate(string(o.Outcome), 40), Outcomes)
	case o.Driver != DriverModel && o.Driver != DriverPlaybook:
		return fmt.Errorf("driver: %s is not one of [model playbook]", truncate(string(o.Driver), 40))
	case o.StartedAt.IsZero():
		return errors.New("started_at: required")
	case o.FinishedAt.IsZero():
		return errors.New("finished_at: required")
	case o.FinishedAt.Before(o.StartedAt):
		return fmt.Errorf("finished_at: %s is before started_at %s", o.FinishedAt.Format(time.RFC3339), o.StartedAt.Format(time.RFC3339))
	}
	return nil
}

// DecodeRequest decodes a remediation request: either a CloudEvents
// envelope of type patrold.remediation.request or the bare payload. Unknown
// payload fields are refused.
func DecodeRequest(raw []byte) (*RemediationRequest, error) {
	var r RemediationRequest
	if err := decodePayload(raw, TypeRemediationRequest, &r); err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// DecodeOutcome decodes a remediation outcome: either a CloudEvents envelope
// of type patrold.remediation.outcome or the bare payload. Unknown payload
// fields are refused.
func DecodeOutcome(raw []byte) (*RemediationOutcome, error) {
	var o RemediationOutcome
	if err := decodePayload(raw, TypeRemediationOutcome, &o); err != nil {
		return nil, err
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &o, nil
}

func decodePayload(raw []byte, wantType string, dst any) error {
	data := raw
	if isEnvelope(raw) {
		ev, err := DecodeEvent(raw)
		if err != nil {
			return err
		}
		if ev.Type != wantType {
			return fmt.Errorf("type: must be %q, got %s", wantType, truncate(ev.Type, 60))
		}
		data = ev.Data
	}
	if err := decodeOne(data, dst); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	return nil
}

// RequestEvent builds the outbox row for a request; id becomes the
// CloudEvents id and the JetStream message id.
func RequestEvent(id string, r *RemediationRequest, now time.Time) (OutboxEvent, error) {
	if err := r.Validate(); err != nil {
		return OutboxEvent{}, fmt.Errorf("remediation request: %w", err)
	}
	subject, typ := RequestSubject()
	return outboxRow(id, subject, typ, r.ResourceID, r, now)
}

// OutcomeEvent builds the outbox row (or the row to Publish directly) for
// an outcome. An outcome names no resource, so the CloudEvents subject is
// omitted; the finding id is in the data.
func OutcomeEvent(id string, o *RemediationOutcome, now time.Time) (OutboxEvent, error) {
	if err := o.Validate(); err != nil {
		return OutboxEvent{}, fmt.Errorf("remediation outcome: %w", err)
	}
	subject, typ := OutcomeSubject()
	return outboxRow(id, subject, typ, "", o, now)
}

func outboxRow(id, subject, typ, resource string, payload any, now time.Time) (OutboxEvent, error) {
	if id == "" {
		return OutboxEvent{}, errors.New("id: required")
	}
	data, err := json.Marshal(payload)
	if err != nil {
		return OutboxEvent{}, fmt.Errorf("encode %s: %w", typ, err)
	}
	return OutboxEvent{ID: id, Subject: subject, Type: typ, ResourceID: resource, Time: now.UTC(), Data: data}, nil
}

// ValidFindingID reports whether s has the form of a finding id: 16
// lower-case hex characters.
func ValidFindingID(s string) bool { return validFindingID(s) }

func validFindingID(s string) bool {
	if len(s) != findingIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func oneOf[T ~string](s T, set []T) bool {
	for _, v := range set {
		if s == v {
			return true
		}
	}
	return false
}
