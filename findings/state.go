package findings

import (
	"time"

	"github.com/patrold/patrold/contracts"
)

// Loop states (derived, docs/FINDINGS.md#loop-states), first match wins.
const (
	StateSuppressed         = "suppressed"
	StateResolved           = "resolved"
	StateSnoozed            = "snoozed"
	StateDismissed          = "dismissed"
	StateInvestigating      = "investigating"
	StateNeedsAttention     = "needs_attention"
	StateRemediationPlanned = "remediation_planned"
	StateRemediating        = "remediating"
	StateRemediationFailed  = "remediation_failed"
	StateTimedOut           = "timed_out"
	StateDetected           = "detected"
)

// Investigation outcomes. The ones a session reports are the wire values
// of package contracts (one place they are spelled), mirrored here as
// untyped strings for the store's columns.
const (
	OutcomeFixVerified            = string(contracts.OutcomeFixVerified)
	OutcomeFixQueued              = string(contracts.OutcomeFixQueued)
	OutcomeFixExecuted            = string(contracts.OutcomeFixExecuted)
	OutcomeFixFailed              = string(contracts.OutcomeFixFailed)
	OutcomeFixVerificationFailed  = string(contracts.OutcomeFixVerificationFailed)
	OutcomeFixVerificationUnknown = string(contracts.OutcomeFixVerificationUnknown)
	OutcomeFixRejected            = string(contracts.OutcomeFixRejected)
	OutcomeCannotFix              = string(contracts.OutcomeCannotFix)
	OutcomeNeedsAttention         = string(contracts.OutcomeNeedsAttention)
	OutcomeTimedOut               = string(contracts.OutcomeTimedOut)
	OutcomeResolved               = "resolved"
	InvestigationRunning          = "running"
)

// LoopStateAt derives the state of a finding at now.
func LoopStateAt(f *Finding, now time.Time) string {
	switch {
	case f.Suppressed:
		return StateSuppressed
	case f.Status == StatusResolved || f.LastOutcome == OutcomeFixVerified:
		return StateResolved
	case f.SnoozedUntil != nil && now.Before(*f.SnoozedUntil):
		return StateSnoozed
	case f.DismissedReason != "":
		return StateDismissed
	case f.InvestigationStatus == InvestigationRunning:
		return StateInvestigating
	}
	switch f.LastOutcome {
	case OutcomeNeedsAttention, OutcomeFixRejected, OutcomeFixVerificationUnknown, OutcomeCannotFix:
		return StateNeedsAttention
	case OutcomeFixQueued:
		return StateRemediationPlanned
	case OutcomeFixExecuted:
		return StateRemediating
	case OutcomeFixFailed, OutcomeFixVerificationFailed:
		return StateRemediationFailed
	case OutcomeTimedOut:
		return StateTimedOut
	}
	return StateDetected
}

// StateCount is the number of findings in one derived state and severity.
type StateCount struct {
	State    string
	Severity Severity
	Count    int
}
