// Package contracts holds what patrold puts on the wire and what the
// other side may rely on. That is the NATS subjects and CloudEvents types
// of every published event, and the CloudEvents envelope. It is also the
// outbox row the relay publishes, and the remediation request and outcome
// with their enums.
//
// It is a leaf: it imports the standard library only, so the findings
// store, the patrol pipeline and the assistant can build events without
// linking the transport (package bus) or each other.
package contracts

import "fmt"

// Subjects and CloudEvents types (docs/NATS.md). Subjects here are
// relative to the configured prefix: the outbox stores "findings.opened.warning"
// and the relay publishes "<prefix>.findings.opened.warning". The helpers are
// pure so the findings and patrol packages can call them while writing outbox
// rows.

// FindingEvent is a finding lifecycle event that is published.
type FindingEvent string

// Finding events.
const (
	FindingOpened     FindingEvent = "opened"
	FindingUpdated    FindingEvent = "updated"
	FindingRepeated   FindingEvent = "repeated"
	FindingResolved   FindingEvent = "resolved"
	FindingReopened   FindingEvent = "reopened"
	FindingSuppressed FindingEvent = "suppressed"
	FindingDismissed  FindingEvent = "dismissed"
	// FindingUndismissed and FindingUnsuppressed undo an operator action
	// on an active finding, so subscribers show it again.
	FindingUndismissed  FindingEvent = "undismissed"
	FindingUnsuppressed FindingEvent = "unsuppressed"
)

// FindingEvents lists every finding event.
var FindingEvents = []FindingEvent{FindingOpened, FindingUpdated, FindingRepeated, FindingResolved, FindingReopened, FindingSuppressed, FindingDismissed,
	FindingUndismissed, FindingUnsuppressed}

// ApprovalEvent is an approval lifecycle event.
type ApprovalEvent string

// Approval events.
const (
	ApprovalRequested ApprovalEvent = "requested"
	ApprovalApproved  ApprovalEvent = "approved"
	ApprovalDenied    ApprovalEvent = "denied"
	ApprovalExpired   ApprovalEvent = "expired"
)

// ApprovalEvents lists every approval event.
var ApprovalEvents = []ApprovalEvent{ApprovalRequested, ApprovalApproved, ApprovalDenied, ApprovalExpired}

// Severities a finding subject may carry (docs/FINDINGS.md).
var Severities = []string{"info", "watch", "warning", "critical"}

// Fixed relative subjects and their CloudEvents types.
const (
	SubjectRunCompleted        = "runs.completed"
	TypeRunCompleted           = "patrold.run.completed"
	SubjectRemediationRequests = "remediation.requests"
	TypeRemediationRequest     = "patrold.remediation.request"
	SubjectRemediationOutcomes = "remediation.outcomes"
	TypeRemediationOutcome     = "patrold.remediation.outcome"
	// TypeFindingPrefix and TypeApprovalPrefix begin the type of every
	// finding and approval event; the event name follows.
	TypeFindingPrefix  = "patrold.finding."
	TypeApprovalPrefix = "patrold.approval."
	// SubjectFindingsAll matches every finding event (a filter subject).
	SubjectFindingsAll = "findings.>"
)

// FindingSubject returns the relative subject and the type of a finding
// event, e.g. ("findings.opened.warning", "patrold.finding.opened").
func FindingSubject(event FindingEvent, severity string) (subject, typ string, err error) {
	if !event.Valid() {
		return "", "", fmt.Errorf("finding event %q is not one of %v", event, FindingEvents)
	}
	if !validSeverity(severity) {
		return "", "", fmt.Errorf("severity %q is not one of %v", severity, Severities)
	}
	subject, typ = FindingSubjectOf(event, severity)
	return subject, typ, nil
}

// FindingSubjectOf spells the subject and type of a finding event without
// checking the values: the one place they are spelled. Callers holding
// already validated values (the findings store) use it; anything else uses
// FindingSubject.
func FindingSubjectOf(event FindingEvent, severity string) (subject, typ string) {
	return "findings." + string(event) + "." + severity, TypeFindingPrefix + string(event)
}

// ApprovalSubject returns the relative subject and the type of an approval
// event, e.g. ("approvals.requested", "patrold.approval.requested").
func ApprovalSubject(event ApprovalEvent) (subject, typ string, err error) {
	if !event.Valid() {
		return "", "", fmt.Errorf("approval event %q is not one of %v", event, ApprovalEvents)
	}
	return "approvals." + string(event), TypeApprovalPrefix + string(event), nil
}

// RunSubject returns the relative subject and type of a finished run.
func RunSubject() (subject, typ string) { return SubjectRunCompleted, TypeRunCompleted }

// RequestSubject returns the relative subject and type of a remediation request.
func RequestSubject() (subject, typ string) {
	return SubjectRemediationRequests, TypeRemediationRequest
}

// OutcomeSubject returns the relative subject and type of a remediation outcome.
func OutcomeSubject() (subject, typ string) {
	return SubjectRemediationOutcomes, TypeRemediationOutcome
}

// FullSubject joins the prefix and a relative subject.
func FullSubject(prefix, relative string) string { return prefix + "." + relative }

// Valid reports whether e is a known finding event.
func (e FindingEvent) Valid() bool {
	switch e {
	case FindingOpened, FindingUpdated, FindingRepeated, FindingResolved, FindingReopened, FindingSuppressed, FindingDismissed,
		FindingUndismissed, FindingUnsuppressed:
		return true
	}
	return false
}

// Valid reports whether e is a known approval event.
func (e ApprovalEvent) Valid() bool {
	switch e {
	case ApprovalRequested, ApprovalApproved, ApprovalDenied, ApprovalExpired:
		return true
	}
	return false
}

func validSeverity(s string) bool {
	for _, v := range Severities {
		if s == v {
			return true
		}
	}
	return false
}
