package findings_test

import (
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) *time.Time { t := now.Add(-d); return &t }

// eligible is a finding every gate condition lets through.
func eligible() findings.Finding {
	return findings.Finding{ID: "f1", ResourceID: "vm/1", Category: "performance", Key: "high_cpu",
		Severity: findings.SeverityWarning, Status: findings.StatusActive}
}

// TestGateConditions has one case per refusal condition; each fails if its
// condition is removed from ShouldInvestigate.
func TestGateConditions(t *testing.T) {
	g := findings.DefaultGate()
	cases := []struct {
		name     string
		autonomy findings.Autonomy
		mutate   func(f *findings.Finding)
		reason   string
	}{
		{"1 autonomy unset", "", nil, findings.RefuseAutonomy},
		{"1 autonomy monitor", findings.AutonomyMonitor, nil, findings.RefuseAutonomy},
		{"2 resolved", findings.AutonomyFull, func(f *findings.Finding) { f.Status = findings.StatusResolved }, findings.RefuseInactive},
		{"2 suppressed", findings.AutonomyFull, func(f *findings.Finding) { f.Suppressed = true }, findings.RefuseInactive},
		{"2 dismissed", findings.AutonomyFull, func(f *findings.Finding) { f.DismissedReason = findings.DismissNotAnIssue }, findings.RefuseInactive},
		{"2 silenced", findings.AutonomyFull, func(f *findings.Finding) { f.Silenced = true }, findings.RefuseInactive},
		{"3 snoozed", findings.AutonomyFull, func(f *findings.Finding) { t := now.Add(time.Hour); f.SnoozedUntil = &t }, findings.RefuseSnoozed},
		{"4 fix queued", findings.AutonomyFull, func(f *findings.Finding) { f.LastOutcome = findings.OutcomeFixQueued }, findings.RefuseFixQueued},
		{"5 terminal fix_verified", findings.AutonomyFull, func(f *findings.Finding) { f.LastOutcome = findings.OutcomeFixVerified }, findings.RefuseTerminal},
		{"5 terminal cannot_fix", findings.AutonomyFull, func(f *findings.Finding) { f.LastOutcome = findings.OutcomeCannotFix }, findings.RefuseTerminal},
		{"5 terminal needs_attention", findings.AutonomyFull, func(f *findings.Finding) { f.LastOutcome = findings.OutcomeNeedsAttention }, findings.RefuseTerminal},
		{"5 terminal unverified", findings.AutonomyFull, func(f *findings.Finding) { f.LastOutcome = findings.OutcomeFixVerificationUnknown }, findings.RefuseTerminal},
		{"5 terminal rejected", findings.AutonomyFull, func(f *findings.Finding) { f.LastOutcome = findings.OutcomeFixRejected }, findings.RefuseTerminal},
		{"5 terminal resolved", findings.AutonomyFull, func(f *findings.Finding) { f.LastOutcome = findings.OutcomeResolved }, findings.RefuseTerminal},
		{"6 severity watch", findings.AutonomyFull, func(f *findings.Finding) { f.Severity = findings.SeverityWatch }, findings.RefuseSeverity},
		{"6 severity info", findings.AutonomyFull, func(f *findings.Finding) { f.Severity = findings.SeverityInfo }, findings.RefuseSeverity},
		{"7 running", findings.AutonomyFull, func(f *findings.Finding) { f.InvestigationStatus = findings.InvestigationRunning }, findings.RefuseRunning},
		{"8 attempts", findings.AutonomyFull, func(f *findings.Finding) { f.Attempts = 3 }, findings.RefuseAttempts},
		{"9 cooldown 1h", findings.AutonomyFull, func(f *findings.Finding) { f.Attempts, f.LastInvestigationAt = 1, ago(59*time.Minute) }, findings.RefuseCooldown},
		{"9 cooldown timed out 10m", findings.AutonomyFull, func(f *findings.Finding) {
			f.Attempts, f.LastOutcome, f.LastInvestigationAt = 1, findings.OutcomeTimedOut, ago(9*time.Minute)
		}, findings.RefuseCooldown},
		{"9 cooldown fix failed 20m", findings.AutonomyFull, func(f *findings.Finding) {
			f.Attempts, f.LastOutcome, f.LastInvestigationAt = 1, findings.OutcomeFixFailed, ago(19*time.Minute)
		}, findings.RefuseCooldown},
		{"9 cooldown verification failed 20m", findings.AutonomyApproval, func(f *findings.Finding) {
			f.Attempts, f.LastOutcome, f.LastInvestigationAt = 1, findings.OutcomeFixVerificationFailed, ago(19*time.Minute)
		}, findings.RefuseCooldown},
		{"synthetic", findings.AutonomyFull, func(f *findings.Finding) { f.ResourceID = "patrold/outbox" }, findings.RefuseSynthetic},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := eligible()
			if ok, why := g.ShouldInvestigate(&f, findings.AutonomyFull, now); !ok {
				t.Fatalf("baseline refused: %s", why)
			}
			if c.mutate != nil {
				c.mutate(&f)
			}
			ok, why := g.ShouldInvestigate(&f, c.autonomy, now)
			if ok || why != c.reason {
				t.Fatalf("got ok=%v reason=%q, want refusal %q", ok, why, c.reason)
			}
		})
	}
}

// TestGateAdmits shows each cooldown ends exactly when configured and that
// the non-terminal outcomes allow retries.
func TestGateAdmits(t *testing.T) {
	g := findings.DefaultGate()
	cases := []struct {
		outcome string
		after   time.Duration
	}{
		{"", time.Hour}, {findings.OutcomeTimedOut, 10 * time.Minute}, {findings.OutcomeFixFailed, 20 * time.Minute},
		{findings.OutcomeFixVerificationFailed, 20 * time.Minute}, {findings.OutcomeFixExecuted, time.Hour},
	}
	for _, c := range cases {
		f := eligible()
		f.Attempts, f.LastOutcome, f.LastInvestigationAt = 2, c.outcome, ago(c.after)
		if ok, why := g.ShouldInvestigate(&f, findings.AutonomyAssisted, now); !ok {
			t.Errorf("%q after %s: refused %s", c.outcome, c.after, why)
		}
	}
	f := eligible()
	f.Severity = findings.SeverityCritical
	f.SnoozedUntil = ago(time.Minute) // snooze over
	if ok, why := g.ShouldInvestigate(&f, findings.AutonomyApproval, now); !ok {
		t.Errorf("expired snooze: %s", why)
	}
	custom := g
	custom.MaxAttempts = 5
	f = eligible()
	f.Attempts = 4
	if ok, _ := custom.ShouldInvestigate(&f, findings.AutonomyFull, now); !ok {
		t.Error("configured max_attempts 5 not honoured")
	}
}

func TestStuck(t *testing.T) {
	g := findings.DefaultGate()
	f := eligible()
	f.InvestigationStatus = findings.InvestigationRunning
	f.InvestigationStarted = ago(15 * time.Minute)
	if g.Stuck(&f, now) {
		t.Error("15 min is inside timeout + grace")
	}
	f.InvestigationStarted = ago(15*time.Minute + time.Second)
	if !g.Stuck(&f, now) {
		t.Error("past timeout + grace must be stuck")
	}
}
