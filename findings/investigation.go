package findings

import "time"

// InvestigationRecord is one attempt at investigating a finding.
type InvestigationRecord struct {
	FindingID string `json:"finding_id"`
	Attempt   int    `json:"attempt"`
	// Episode is which opening of the finding it belongs to: 1 for the
	// first, 2 after its first reopening, ... (0: recorded before
	// episodes were).
	Episode   int        `json:"episode"`
	SessionID string     `json:"session_id,omitempty"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	Outcome   string     `json:"outcome,omitempty"`
	Summary   string     `json:"summary,omitempty"`
}

// RequestDraft renders the remediation request event for a finding that
// passed the gate, for the given attempt, in the writer's epoch (0 on a
// single instance).
type RequestDraft func(f *Finding, attempt int, epoch uint64) OutboxDraft

// Outcome is the end of one investigation, as reported by a session.
type Outcome struct {
	FindingID string
	SessionID string
	Attempt   int
	Outcome   string
	Summary   string
	// Epoch is the epoch of the request the session answered.
	Epoch uint64
}

// validOutcomes are the outcomes a session may report.
var validOutcomes = map[string]bool{
	OutcomeFixVerified: true, OutcomeFixQueued: true, OutcomeFixExecuted: true, OutcomeFixFailed: true,
	OutcomeFixVerificationFailed: true, OutcomeFixVerificationUnknown: true, OutcomeFixRejected: true,
	OutcomeCannotFix: true, OutcomeNeedsAttention: true, OutcomeTimedOut: true,
}

// ValidOutcome reports whether o is an outcome a session may report.
func ValidOutcome(o string) bool { return validOutcomes[o] }
