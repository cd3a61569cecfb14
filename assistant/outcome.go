package assistant

import (
	"context"
	"errors"
	"time"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/prompt"
)

// finishTimeout bounds storing and publishing a session's end, which runs
// even when the session's context has ended.
const finishTimeout = 15 * time.Second

// Result is how a session (or a resumed session) ended.
type Result struct {
	Transcript Transcript `json:"transcript"`
	Attempt    int        `json:"attempt"`
	Summary    string     `json:"summary"`
	// ApprovalID names the approval a fix_queued session waits for.
	ApprovalID string `json:"approval_id,omitempty"`
	// RestoredState is the state a resumed session's FSM was restored in.
	RestoredState agent.State `json:"restored_state,omitempty"`
	StartedAt     time.Time   `json:"started_at"`
	FinishedAt    time.Time   `json:"finished_at"`
	// CostUSD is what the session's model calls cost.
	CostUSD float64 `json:"cost_usd"`
	// exchange is the recorded model exchange (JSON), stored for replay.
	exchange []byte
}

// Outcome returns the remediation outcome message for the result.
func (r *Result) Outcome() *contracts.RemediationOutcome {
	return &contracts.RemediationOutcome{
		SessionID: r.Transcript.SessionID, FindingID: r.Transcript.FindingID, Attempt: r.Attempt,
		Outcome: r.Transcript.Outcome, Driver: r.Transcript.Driver, Summary: r.Summary,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Epoch: r.Transcript.Epoch,
	}
}

// verdict is what the outcome is decided from.
type verdict struct {
	queued      bool // a write waits for an approval
	interrupted bool // the session's context ended
	executed    int  // actions executed
	actionOK    bool // the last executed action succeeded
	unverified  bool // the FSM has a write nobody read back
	afterWrite  Condition
	modelFailed bool
	stopped     bool // a budget stopped the model
	escalated   bool // the disclosure guard withheld a reply
}

// decideOutcome maps a session's end to exactly one contract outcome.
// fix_verified needs check_condition, read after the last write, to say
// cleared; anything short of that is never reported as a fix.
func decideOutcome(v verdict) contracts.Outcome {
	switch {
	case v.escalated:
		return contracts.OutcomeNeedsAttention
	case v.queued:
		return contracts.OutcomeFixQueued
	case v.interrupted:
		return contracts.OutcomeTimedOut
	case v.executed == 0 && (v.modelFailed || v.stopped):
		return contracts.OutcomeNeedsAttention
	case v.executed == 0:
		return contracts.OutcomeCannotFix
	case v.unverified:
		return contracts.OutcomeFixVerificationUnknown
	case v.afterWrite == ConditionCleared:
		return contracts.OutcomeFixVerified
	case v.afterWrite == ConditionPresent && v.actionOK:
		return contracts.OutcomeFixVerificationFailed
	case v.afterWrite == ConditionPresent:
		return contracts.OutcomeFixFailed
	}
	return contracts.OutcomeFixVerificationUnknown
}

func (s *session) verdict(ctxErr error) verdict {
	fsm := s.agent.FSM()
	state := fsm.State()
	s.env.mu.Lock()
	defer s.env.mu.Unlock()
	v := verdict{
		queued: s.env.request != nil, interrupted: ctxErr != nil, executed: s.env.executed,
		unverified: state == agent.StateWriting || (state == agent.StateVerifying && !fsm.ReadAfterWrite()),
		afterWrite: s.env.afterWrite, modelFailed: s.providerErr != nil,
		stopped: s.stopped, escalated: s.escalation != "",
	}
	if s.env.lastExec != nil {
		v.actionOK = s.env.lastExec.OK()
	}
	return v
}

// finish decides the outcome, stores the transcript (and the approval a
// queued session waits for), then publishes and records the outcome. The
// result is returned even when publishing fails.
func (a *Assistant) finish(ctx context.Context, s *session, ctxErr error) (*Result, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout+a.opts.StoreRetry)
	defer cancel()
	now := a.nowUTC()
	outcome := decideOutcome(s.verdict(ctxErr))
	if outcome == contracts.OutcomeTimedOut {
		s.reason = "session interrupted: " + ctxErr.Error()
	}
	summary := s.summaryFor(outcome)
	t := &s.state.Transcript
	t.Outcome, t.FinalState, t.Escalation = outcome, s.agent.FSM().State(), s.escalation
	if s.playbookDone {
		t.FinalAnswer = prompt.Safe(summary, maxNoteRunes)
	}
	exchange, err := s.recording()
	if err == nil && exchange != nil && s.restored != "" {
		// A resumed session continues the exchange recorded before it parked.
		exchange, err = a.appendExchange(ctx, s.state.ID, exchange)
	}
	if err != nil {
		a.log.Warn("session exchange not recorded", "session", s.state.ID, "err", err)
	}
	res := &Result{Transcript: *t, Attempt: s.state.Attempt, Summary: summary, RestoredState: s.restored,
		StartedAt: s.state.StartedAt, FinishedAt: now, CostUSD: s.spent(), exchange: exchange}
	if res.FinishedAt.Before(res.StartedAt) {
		res.FinishedAt = res.StartedAt
	}
	var errs []error
	if outcome == contracts.OutcomeFixQueued {
		var ap Approval
		err := a.retryStore(ctx, res, func(ctx context.Context) (err error) {
			ap, err = a.park(ctx, s, now)
			return err
		})
		if err != nil {
			return res, err
		}
		res.ApprovalID = ap.ID
		errs = append(errs, a.publishApproval(ctx, contracts.ApprovalRequested, ap, now))
	}
	if err := a.retryStore(ctx, res, func(ctx context.Context) error { return a.saveSession(ctx, res) }); err != nil {
		return res, err
	}
	a.metrics.session(res)
	a.log.Info("remediation session ended", "session", res.Transcript.SessionID, "finding", res.Transcript.FindingID,
		"driver", res.Transcript.Driver, "outcome", outcome, "steps", len(t.Steps))
	errs = append(errs, a.emitOutcome(ctx, res))
	return res, errors.Join(errs...)
}

// emitOutcome publishes the outcome and, with a Recorder, applies it.
func (a *Assistant) emitOutcome(ctx context.Context, res *Result) error {
	o := res.Outcome()
	var errs []error
	if a.opts.Publisher != nil {
		row, err := contracts.OutcomeEvent(outcomeEventID(res), o, res.FinishedAt)
		if err == nil {
			err = a.opts.Publisher.Publish(ctx, row)
		}
		errs = append(errs, err)
	}
	if a.opts.Recorder != nil {
		_, err := a.opts.Recorder.RecordOutcome(ctx, findings.Outcome{FindingID: o.FindingID, SessionID: o.SessionID,
			Attempt: o.Attempt, Outcome: string(o.Outcome), Summary: o.Summary, Epoch: o.Epoch}, res.FinishedAt)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// retryStore runs fn until it succeeds, fails otherwise than with
// ErrStoreUnavailable, or StoreRetry has passed since the first attempt
// (ctx bounds it too).
func (a *Assistant) retryStore(ctx context.Context, res *Result, fn func(context.Context) error) error {
	deadline := time.Now().Add(a.opts.StoreRetry)
	wait := 100 * time.Millisecond
	for {
		err := fn(ctx)
		if err == nil || !errors.Is(err, ErrStoreUnavailable) || !time.Now().Add(wait).Before(deadline) {
			return err
		}
		a.log.Warn("session end not stored yet; retrying", "session", res.Transcript.SessionID, "retry_in", wait, "err", err)
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}
