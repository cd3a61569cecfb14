// Package outcome applies the outcomes remediation sessions report to
// their findings: the consumer side of the remediation outcomes, kept next
// to the findings lifecycle it drives (the transport only delivers).
package outcome

import (
	"context"
	"errors"
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
