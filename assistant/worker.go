package assistant

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
)

// Worker defaults.
const (
	// DefaultDurable is the durable consumer the workers share (work queue).
	DefaultDurable = "patrold-assistant"
	// DefaultMaxConcurrent is investigation.max_concurrent's default.
	DefaultMaxConcurrent = findings.DefaultMaxConcurrent
	// DefaultSweepInterval is a sensible approval expiry sweep interval.
	DefaultSweepInterval = 30 * time.Second
	// ackMargin keeps a request unacknowledged past the session's own
	// deadline and the time to store and publish its end.
	ackMargin = 30 * time.Second
)

// Transport is what the worker needs of bus.Transport.
type Transport interface {
	Publisher
	Consume(ctx context.Context, o bus.ConsumerOptions, h func(context.Context, *contracts.RemediationRequest) error) error
}

var _ Transport = (*bus.Transport)(nil)

// WorkerOptions configure a Worker: the session options plus the transport.
type WorkerOptions struct {
	Options
	// Transport consumes requests; it is also the Publisher when none is set.
	Transport Transport // required
	// Durable names the shared consumer ("" = DefaultDurable); Stream and
	// Subject override the transport's defaults when set.
	Durable, Stream, Subject string
	// MaxConcurrent caps sessions at once (investigation.max_concurrent).
	MaxConcurrent int
	// SweepInterval is how often expired approvals are swept; 0 disables
	// the loop (tests call Assistant.ExpireApprovals).
	SweepInterval time.Duration
}

// Worker consumes remediation requests, runs one session per request and
// publishes exactly one outcome per session.
type Worker struct {
	opts WorkerOptions
	a    *Assistant
}

// NewWorker validates o and builds the worker and its Assistant.
func NewWorker(o WorkerOptions) (*Worker, error) {
	var errs []error
	if o.Transport == nil {
		errs = append(errs, errors.New("transport: required"))
	}
	if o.MaxConcurrent < 0 {
		errs = append(errs, fmt.Errorf("investigation.max_concurrent: must not be negative, got %d", o.MaxConcurrent))
	}
	if o.SweepInterval < 0 {
		errs = append(errs, fmt.Errorf("sweep_interval: must not be negative, got %s", o.SweepInterval))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("assistant worker: %w", err)
	}
	if o.MaxConcurrent == 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.Durable == "" {
		o.Durable = DefaultDurable
	}
	if o.Publisher == nil {
		o.Publisher = o.Transport
	}
	a, err := New(o.Options)
	if err != nil {
		return nil, err
	}
	return &Worker{opts: o, a: a}, nil
}

// Assistant returns the worker's Assistant (api.Approvals for the API).
func (w *Worker) Assistant() *Assistant { return w.a }

// Run consumes requests until ctx ends, sweeping expired approvals
// meanwhile when SweepInterval is set.
func (w *Worker) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if w.opts.SweepInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.sweep(ctx)
		}()
	}
	err := w.opts.Transport.Consume(ctx, w.ConsumerOptions(), w.Handle)
	wg.Wait()
	return err
}

// ConsumerOptions is the durable request consumer the worker uses; a
// process creates it before it may publish requests (consumers start with
// new messages).
func (w *Worker) ConsumerOptions() bus.ConsumerOptions {
	o := RequestConsumerOptions(w.opts.Stream, w.opts.Subject, w.a.opts.SessionTimeout, w.a.opts.StoreRetry, w.opts.MaxConcurrent)
	o.Durable = w.opts.Durable
	return o
}

// RequestConsumerOptions is the shared request consumer every worker of a
// deployment uses, in-serve or standalone. The daemon creates it at
// start, so requests published before a standalone worker first connects
// wait for it. It allows one session in flight per
// investigation.max_concurrent across all workers. It redelivers only
// after a session's whole deadline: its timeout, storing its end, waiting
// out storeRetry. Zero values take the defaults.
func RequestConsumerOptions(stream, subject string, sessionTimeout, storeRetry time.Duration, maxConcurrent int) bus.ConsumerOptions {
	if sessionTimeout <= 0 {
		sessionTimeout = DefaultSessionTimeout
	}
	if maxConcurrent <= 0 {
		maxConcurrent = DefaultMaxConcurrent
	}
	return bus.ConsumerOptions{Stream: stream, Durable: DefaultDurable, Subject: subject,
		MaxInFlight: maxConcurrent, AckWait: sessionTimeout + finishTimeout + storeRetry + ackMargin}
}

func (w *Worker) sweep(ctx context.Context) {
	t := time.NewTicker(w.opts.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := w.a.ExpireApprovals(ctx, w.a.nowUTC()); err != nil && ctx.Err() == nil {
				w.a.log.Warn("approval expiry sweep", "err", err)
			}
		}
	}
}

// Handle runs one request. A redelivered request whose session already
// ended republishes the stored outcome (same event id, so JetStream drops
// the duplicate) instead of acting again; one whose session was cut off
// (a crash) is not re-run blind but ends needs_attention. An error makes
// the transport redeliver the request later.
func (w *Worker) Handle(ctx context.Context, r *contracts.RemediationRequest) error {
	prev, err := w.a.LastSession(ctx, r.FindingID, r.Attempt)
	switch {
	case err == nil && prev.Transcript.Outcome != "":
		return w.a.emitOutcome(ctx, prev)
	case err == nil:
		return w.dropped(r, w.abandon(ctx, prev))
	case !errors.Is(err, ErrSessionNotFound):
		return err
	}
	_, err = w.a.Run(ctx, Request{FindingID: r.FindingID, Attempt: r.Attempt, Autonomy: findings.Autonomy(r.Autonomy), Epoch: r.Epoch})
	return w.dropped(r, err)
}

// dropped maps what cannot succeed on redelivery to nil (the request is
// dropped, logged) and returns any other error.
func (w *Worker) dropped(r *contracts.RemediationRequest, err error) error {
	switch {
	case errors.Is(err, findings.ErrNotFound):
		w.a.log.Warn("remediation request for an unknown finding dropped", "finding", r.FindingID)
		return nil
	case errors.Is(err, ErrNotDispatched):
		w.a.log.Warn("remediation request dropped: the writer has no open investigation for it", "finding", r.FindingID, "attempt", r.Attempt)
		return nil
	}
	return err
}

// abandon ends an unfinished session left by an interrupted worker, once
// it is certainly not running any more.
func (w *Worker) abandon(ctx context.Context, prev *Result) error {
	if w.a.nowUTC().Sub(prev.StartedAt) < w.a.opts.SessionTimeout+finishTimeout+w.a.opts.StoreRetry {
		return fmt.Errorf("session %s for finding %s attempt %d may still be running", prev.Transcript.SessionID, prev.Transcript.FindingID, prev.Attempt)
	}
	prev.Transcript.Outcome = contracts.OutcomeNeedsAttention
	prev.Transcript.Steps = []Step{}
	prev.Summary = "a previous session for this attempt was interrupted; not running an action again without an operator"
	prev.FinishedAt = w.a.nowUTC()
	if err := w.a.saveSession(ctx, prev); err != nil {
		return err
	}
	return w.a.emitOutcome(ctx, prev)
}
