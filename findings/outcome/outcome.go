// Package outcome applies the outcomes remediation sessions report to
// their findings: the consumer side of the remediation outcomes, kept next
// to the findings lifecycle it drives (the transport only delivers).
package outcome

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/patrold/patrold/findings"
)

// Recorder records an outcome on its finding; applied is false for a
// duplicate or stale outcome (the finding is already past it).
type Recorder interface {
	RecordOutcome(ctx context.Context, o findings.Outcome, now time.Time) (applied bool, err error)
}

// Handler applies outcomes through a Recorder.
type Handler struct {
	Recorder Recorder
	Now      func() time.Time // default time.Now
	Logger   *slog.Logger     // default: discard
	// Applied, when set, is called after an outcome changed its finding
	// (the finding's events are in the outbox: publish them).
	Applied func()
}

// Handle applies o to its finding. An outcome for a finding that no
// longer exists is dropped (nil: nothing to retry); any other error is
// returned so that the delivery is retried.
func (h Handler) Handle(ctx context.Context, o findings.Outcome) error {
	now, log := h.Now, h.Logger
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	applied, err := h.Recorder.RecordOutcome(ctx, o, now())
	if errors.Is(err, findings.ErrNotFound) {
		log.Warn("outcome for an unknown finding dropped", "finding", o.FindingID, "session", o.SessionID)
		return nil
	}
	if err != nil {
		return err
	}
	if applied {
		log.Info("remediation outcome recorded", "finding", o.FindingID, "attempt", o.Attempt, "outcome", o.Outcome)
		if h.Applied != nil {
			h.Applied()
		}
	}
	return nil
}

// Check is the writer's own deterministic check of a finding's
// condition, measured now: cleared reports the condition absent, measured
// says what was found in words.
type Check func(ctx context.Context, findingID string) (cleared bool, measured string, err error)

// Confirmed is a Recorder that lets fix_verified through only when its
// Check says the condition is absent now. Otherwise the outcome is
// recorded as fix_verification_failed, its summary holding both the
// session's claim and the measurement. Every other outcome passes as is.
type Confirmed struct {
	Recorder Recorder
	Check    Check // required
}

// RecordOutcome re-checks a fix_verified outcome, then records.
func (c Confirmed) RecordOutcome(ctx context.Context, o findings.Outcome, now time.Time) (bool, error) {
	//mutate:outcome-fix-recheck ./findings/outcome ^TestUnconfirmedFixIsVerificationFailed$
	if o.Outcome == findings.OutcomeFixVerified {
		o = c.confirm(ctx, o)
	}
	return c.Recorder.RecordOutcome(ctx, o, now)
}

func (c Confirmed) confirm(ctx context.Context, o findings.Outcome) findings.Outcome {
	cleared, measured, err := c.Check(ctx, o.FindingID)
	if err != nil {
		measured = "could not measure: " + err.Error()
	}
	if err == nil && cleared {
		return o
	}
	o.Outcome = findings.OutcomeFixVerificationFailed
	o.Summary = VerificationFailed(o.Summary, measured)
	return o
}

// VerificationFailed is the summary of a fix_verified claim patrold's
// check did not confirm.
func VerificationFailed(claim, measured string) string {
	return fmt.Sprintf("session claimed fix_verified (%s); patrold's check measured: %s", claim, measured)
}
