package findings

import (
	"strings"
	"time"
)

// Autonomy is how far patrold may act on its own (docs/ASSISTANT.md#autonomy).
type Autonomy string

// Autonomy levels.
const (
	AutonomyMonitor  Autonomy = "monitor"
	AutonomyApproval Autonomy = "approval"
	AutonomyAssisted Autonomy = "assisted"
	AutonomyFull     Autonomy = "full"
)

// Gate defaults (docs/PATROL_ARCHITECTURE.md#investigation-gate), read from this one place.
const (
	DefaultMaxAttempts      = 3
	DefaultCooldown         = time.Hour
	DefaultTimeoutCooldown  = 10 * time.Minute
	DefaultFixRetryCooldown = 20 * time.Minute
	DefaultInvestigationTTL = 10 * time.Minute
	DefaultMaxConcurrent    = 3
	// StuckGrace is added to the investigation timeout before a running
	// investigation is declared timed out.
	StuckGrace = 5 * time.Minute
)

// SyntheticResourcePrefix marks findings about patrold itself; they are
// never investigated.
const SyntheticResourcePrefix = "patrold/"

// Refusal reasons of the investigation gate, one per condition.
const (
	RefuseAutonomy   = "autonomy_monitor"
	RefuseInactive   = "not_active"
	RefuseSnoozed    = "snoozed"
	RefuseFixQueued  = "fix_queued"
	RefuseTerminal   = "terminal_outcome"
	RefuseSeverity   = "severity_below_warning"
	RefuseRunning    = "investigation_running"
	RefuseAttempts   = "max_attempts_reached"
	RefuseCooldown   = "cooldown"
	RefuseSynthetic  = "synthetic_finding"
	RefuseConcurrent = "max_concurrent"
)

// Gate holds the investigation limits.
type Gate struct {
	MaxAttempts      int
	Cooldown         time.Duration
	TimeoutCooldown  time.Duration
	FixRetryCooldown time.Duration
	Timeout          time.Duration
	MaxConcurrent    int
}

// DefaultGate returns the documented defaults.
func DefaultGate() Gate {
	return Gate{MaxAttempts: DefaultMaxAttempts, Cooldown: DefaultCooldown, TimeoutCooldown: DefaultTimeoutCooldown,
		FixRetryCooldown: DefaultFixRetryCooldown, Timeout: DefaultInvestigationTTL, MaxConcurrent: DefaultMaxConcurrent}
}

// terminalOutcomes end investigation of a finding until it regresses.
var terminalOutcomes = map[string]bool{
	OutcomeFixVerified: true, OutcomeResolved: true, OutcomeFixRejected: true, OutcomeCannotFix: true,
	OutcomeNeedsAttention: true, OutcomeFixVerificationUnknown: true,
}

// ShouldInvestigate reports whether f may be investigated at now under
// autonomy; when not, reason names the first condition that refused.
func (g Gate) ShouldInvestigate(f *Finding, autonomy Autonomy, now time.Time) (ok bool, reason string) {
	//mutate:gate:cases ./findings ^TestGateConditions$
	switch {
	case autonomy == "" || autonomy == AutonomyMonitor:
		return false, RefuseAutonomy
	case strings.HasPrefix(f.ResourceID, SyntheticResourcePrefix):
		return false, RefuseSynthetic
	case !f.Active() || f.Suppressed || f.DismissedReason != "" || f.Held():
		return false, RefuseInactive
	case f.SnoozedUntil != nil && now.Before(*f.SnoozedUntil):
		return false, RefuseSnoozed
	case f.LastOutcome == OutcomeFixQueued:
		return false, RefuseFixQueued
	case terminalOutcomes[f.LastOutcome]:
		return false, RefuseTerminal
	case f.Severity != SeverityWarning && f.Severity != SeverityCritical:
		return false, RefuseSeverity
	case f.InvestigationStatus == InvestigationRunning:
		return false, RefuseRunning
	case f.Attempts >= g.MaxAttempts:
		return false, RefuseAttempts
	case f.LastInvestigationAt != nil && now.Sub(*f.LastInvestigationAt) < g.cooldownAfter(f.LastOutcome):
		return false, RefuseCooldown
	}
	return true, ""
}

// cooldownAfter is the wait after an investigation that ended with outcome.
func (g Gate) cooldownAfter(outcome string) time.Duration {
	switch outcome {
	case OutcomeTimedOut:
		return g.TimeoutCooldown
	case OutcomeFixFailed, OutcomeFixVerificationFailed:
		return g.FixRetryCooldown
	}
	return g.Cooldown
}

// Stuck reports whether a running investigation has outlived its timeout
// plus the grace period and must be marked timed out.
func (g Gate) Stuck(f *Finding, now time.Time) bool {
	return f.InvestigationStatus == InvestigationRunning && f.InvestigationStarted != nil &&
		now.Sub(*f.InvestigationStarted) > g.Timeout+StuckGrace
}
