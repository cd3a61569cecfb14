package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

const (
	pullWait        = 5 * time.Second
	pullErrorPause  = time.Second
	lagInterval     = 5 * time.Second
	ackWaitMargin   = 5 * time.Second
	maxReasonLength = 200
	// replayInactive removes a replay consumer once it is read: a pull
	// waits at most pullWait, so a replay in progress is never idle as long.
	replayInactive = 2 * pullWait
)

// permanentError marks an event no retry can deliver (it does not decode):
// it is dead-lettered at once.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// consumer is one sink's durable pull consumer. It delivers one event at
// a time (max_ack_pending 1), so a sink sees events in stream order except
// while a failed one waits for its redelivery.
type consumer struct {
	js      jetstream.JetStream
	stream  string
	sink    SinkOptions // defaults applied
	filters []string
	ackWait time.Duration
	m       *metrics
	log     *slog.Logger
	deliver func(ctx context.Context, msg jetstream.Msg) error
}

func (c *consumer) config() jetstream.ConsumerConfig {
	cfg := jetstream.ConsumerConfig{
		Durable:       Durable(c.sink.Name),
		Description:   fmt.Sprintf("patrold notify sink %s (%s)", c.sink.Name, c.sink.Kind),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.ackWait,
		MaxDeliver:    c.sink.MaxDeliver,
		MaxAckPending: 1,
		DeliverPolicy: jetstream.DeliverNewPolicy,
	}
	if len(c.filters) == 1 {
		cfg.FilterSubject = c.filters[0]
	} else {
		cfg.FilterSubjects = c.filters
	}
	return cfg
}

// ensure creates or updates the durable consumer.
func (c *consumer) ensure(ctx context.Context) (jetstream.Consumer, error) {
	cons, err := c.js.CreateOrUpdateConsumer(ctx, c.stream, c.config())
	if err != nil {
		return nil, fmt.Errorf("notify sink %s: consumer %s: %w", c.sink.Name, Durable(c.sink.Name), err)
	}
	return cons, nil
}

// run pulls and delivers until ctx ends.
func (c *consumer) run(ctx context.Context) error {
	cons, err := c.ensure(ctx)
	if err != nil {
		return err
	}
	go c.watchLag(ctx, cons)
	for ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, pullWait)
		msg, err := cons.Next(jetstream.FetchContext(fctx))
		cancel()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, jetstream.ErrNoMessages) {
				c.log.Debug("pull", "err", err)
				sleep(ctx, pullErrorPause)
			}
			continue
		}
		c.handle(ctx, msg)
		c.updateLag(ctx, cons)
	}
	return nil
}

// handle delivers one message: ack after the sink accepted it; on failure
// a delayed nak (backoff doubling per delivery) or, on the last allowed
// delivery, termination counted as a dead letter.
func (c *consumer) handle(ctx context.Context, msg jetstream.Msg) {
	delivered := uint64(1)
	var seq uint64
	if md, err := msg.Metadata(); err == nil {
		delivered, seq = md.NumDelivered, md.Sequence.Stream
	}
	hctx, cancel := context.WithTimeout(ctx, c.ackWait-ackWaitMargin)
	err := c.call(hctx, msg)
	cancel()
	name := c.sink.Name
	var perm *permanentError
	switch {
	case err == nil:
		c.m.sent.WithLabelValues(name).Inc()
		// confirmed, so the lag read next counts it as done
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pullWait)
		err = msg.DoubleAck(actx)
		cancel()
	case ctx.Err() != nil:
		err = msg.Nak() // shutting down: the next start delivers it at once
	case errors.As(err, &perm):
		c.m.deadLetters.WithLabelValues(name).Inc()
		c.log.Warn("event does not decode; dead-lettered", "subject", msg.Subject(), "stream_seq", seq, "err", err)
		err = msg.TermWithReason(truncateReason(err.Error()))
	case delivered >= uint64(c.sink.MaxDeliver):
		c.m.failed.WithLabelValues(name).Inc()
		c.m.deadLetters.WithLabelValues(name).Inc()
		c.log.Error("delivery failed on the last attempt; dead-lettered", "subject", msg.Subject(), "stream_seq", seq,
			"delivered", delivered, "err", err)
		err = msg.TermWithReason(truncateReason("max_deliver reached: " + err.Error()))
	default:
		c.m.failed.WithLabelValues(name).Inc()
		delay := backoff(c.sink.Backoff, c.sink.MaxBackoff, delivered)
		c.log.Warn("delivery failed; will retry", "subject", msg.Subject(), "stream_seq", seq, "delivered", delivered,
			"retry_in", delay, "err", err)
		err = msg.NakWithDelay(delay)
	}
	if err != nil {
		c.log.Warn("acknowledge", "err", err)
	}
}

// call runs the sink, turning a panic into an error.
func (c *consumer) call(ctx context.Context, msg jetstream.Msg) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("sink panic: %v", p)
		}
	}()
	return c.deliver(ctx, msg)
}

// backoff is base * 2^(delivered-1), at most max.
func backoff(base, max time.Duration, delivered uint64) time.Duration {
	d := base
	for i := uint64(1); i < delivered && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

func (c *consumer) watchLag(ctx context.Context, cons jetstream.Consumer) {
	t := time.NewTicker(lagInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.updateLag(ctx, cons)
		}
	}
}

func (c *consumer) updateLag(ctx context.Context, cons jetstream.Consumer) {
	ictx, cancel := context.WithTimeout(ctx, pullWait)
	defer cancel()
	info, err := cons.Info(ictx)
	if err != nil {
		return
	}
	c.m.lag.WithLabelValues(c.sink.Name).Set(float64(info.NumPending) + float64(info.NumAckPending))
}

func truncateReason(s string) string {
	if len(s) > maxReasonLength {
		return s[:maxReasonLength]
	}
	return s
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
