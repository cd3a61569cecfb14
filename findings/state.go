package findings

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/patrold/patrold/contracts"
)

// Loop states (derived, BEHAVIOUR.md §4), first match wins.
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

// StateCounts counts findings by derived loop state and severity at now,
// reading only the columns the derivation needs (metrics scrape this).
func (s *Store) StateCounts(ctx context.Context, now time.Time) ([]StateCount, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT severity, status, suppressed, snoozed_until, dismissed_reason,
		investigation_status, last_outcome, count(*) FROM findings
		GROUP BY severity, status, suppressed, snoozed_until, dismissed_reason, investigation_status, last_outcome`)
	if err != nil {
		return nil, fmt.Errorf("count findings: %w", err)
	}
	defer rows.Close()
	acc := map[[2]string]int{}
	for rows.Next() {
		var f Finding
		var snoozed sql.NullString
		var n int
		if err := rows.Scan(&f.Severity, &f.Status, &f.Suppressed, &snoozed, &f.DismissedReason, &f.InvestigationStatus, &f.LastOutcome, &n); err != nil {
			return nil, err
		}
		f.SnoozedUntil = parseTimePtr(snoozed)
		acc[[2]string{LoopStateAt(&f, now), string(f.Severity)}] += n
	}
	out := make([]StateCount, 0, len(acc))
	for k, n := range acc {
		out = append(out, StateCount{State: k[0], Severity: Severity(k[1]), Count: n})
	}
	return out, rows.Err()
}
