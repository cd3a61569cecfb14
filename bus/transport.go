package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/contracts"
)

// Consumer defaults.
const (
	DefaultMaxInFlight = 4
	DefaultAckWait     = 30 * time.Second
	DefaultMaxDeliver  = 5
	DefaultNakDelay    = 5 * time.Second
	maxNakDelay        = 5 * time.Minute
	maxTermReason      = 200
)

// StreamConsumers is the part of jetstream.JetStream the transport uses.
type StreamConsumers interface {
	CreateOrUpdateConsumer(ctx context.Context, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error)
	PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)
}

var _ StreamConsumers = (jetstream.JetStream)(nil)

// TransportOptions configure a Transport.
type TransportOptions struct {
	JetStream  StreamConsumers
	Prefix     string // subject prefix, e.g. "patrol"
	Stream     string // default contracts.DefaultStreamName
	Source     string // CloudEvents source for Publish; "" = contracts.DefaultSource()
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Guard signs what Publish sends and verifies every consumed message
	// (nil: neither).
	Guard *Guard
}

// ConsumerOptions configure one durable pull consumer.
type ConsumerOptions struct {
	// Stream defaults to the transport's stream.
	Stream string
	// Durable is the consumer name; workers sharing it share the work.
	Durable string
	// Subject is the full filter subject; "" = the kind's subject.
	Subject string
	// MaxInFlight caps unacknowledged messages, consumer-wide (it is the
	// consumer's MaxAckPending) and in this process.
	MaxInFlight int
	// AckWait is the redelivery timeout and the handler's deadline.
	AckWait time.Duration
	// MaxDeliver bounds deliveries of one message.
	MaxDeliver int
	// NakDelay is the redelivery delay after a handler error, multiplied by
	// the delivery count (capped at 5 min).
	NakDelay time.Duration
}

// Transport carries remediation requests and outcomes over JetStream.
type Transport struct {
	opts TransportOptions
	log  *slog.Logger
	m    transportMetrics
}

// NewTransport validates the options and registers the consumer metrics.
func NewTransport(o TransportOptions) (*Transport, error) {
	if o.JetStream == nil {
		return nil, errors.New("transport: JetStream is required")
	}
	if !contracts.ValidToken(o.Prefix) {
		return nil, fmt.Errorf("transport: Prefix %q is not a single NATS subject token", o.Prefix)
	}
	setStr(&o.Stream, contracts.DefaultStreamName)
	setStr(&o.Source, contracts.DefaultSource())
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := newTransportMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	return &Transport{opts: o, log: o.Logger.With("component", "bus_transport"), m: m}, nil
}

// Publish publishes one event directly (synchronously, with the
// Nats-Msg-Id dedup header), for processes without an outbox such as a
// remote assistant worker. Build the row with contracts.OutcomeEvent.
func (t *Transport) Publish(ctx context.Context, row contracts.OutboxEvent) error {
	msg, err := EventMessage(t.opts.Prefix, t.opts.Source, row)
	if err != nil {
		return fmt.Errorf("publish %s: %w", row.Type, err)
	}
	t.opts.Guard.Sign(msg)
	if _, err := t.opts.JetStream.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("publish %s (id %s): %w", row.Type, row.ID, err)
	}
	return nil
}

// Consume runs a durable pull consumer on remediation requests until ctx
// ends. A handler error naks the request with a growing delay; a request
// that does not decode is terminated and counted, never retried.
func (t *Transport) Consume(ctx context.Context, o ConsumerOptions, h func(context.Context, *contracts.RemediationRequest) error) error {
	return consume(ctx, t, KindRemediationRequest, contracts.SubjectRemediationRequests, o, contracts.DecodeRequest, h)
}

// ConsumeOutcomes runs a durable pull consumer on remediation outcomes
// until ctx ends, with the same rules as Consume.
func (t *Transport) ConsumeOutcomes(ctx context.Context, o ConsumerOptions, h func(context.Context, *contracts.RemediationOutcome) error) error {
	return consume(ctx, t, KindRemediationOutcome, contracts.SubjectRemediationOutcomes, o, contracts.DecodeOutcome, h)
}

func (o ConsumerOptions) withDefaults(stream, subject string) ConsumerOptions {
	setStr(&o.Stream, stream)
	setStr(&o.Subject, subject)
	setNum(&o.MaxInFlight, DefaultMaxInFlight)
	setNum(&o.AckWait, DefaultAckWait)
	setNum(&o.MaxDeliver, DefaultMaxDeliver)
	setNum(&o.NakDelay, DefaultNakDelay)
	return o
}

func (o ConsumerOptions) validate() error {
	switch {
	case !contracts.ValidToken(o.Durable):
		return fmt.Errorf("consumer: Durable %q must be letters, digits, - and _", o.Durable)
	case !contracts.ValidToken(o.Stream):
		return fmt.Errorf("consumer: Stream %q must be letters, digits, - and _", o.Stream)
	case o.MaxInFlight < 0 || o.MaxDeliver < 0:
		return errors.New("consumer: MaxInFlight and MaxDeliver must not be negative")
	case o.AckWait < 0 || o.NakDelay < 0:
		return errors.New("consumer: AckWait and NakDelay must not be negative")
	}
	return nil
}

// EnsureRequestConsumer and EnsureOutcomeConsumer create (or update) the
// durable consumer now. Consumers start with new messages, so a process
// must ensure its consumers exist before anything it publishes could be
// meant for them; Consume would otherwise create them only when it starts.
func (t *Transport) EnsureRequestConsumer(ctx context.Context, o ConsumerOptions) error {
	_, _, err := ensureConsumer(ctx, t, contracts.SubjectRemediationRequests, o)
	return err
}

// EnsureOutcomeConsumer is EnsureRequestConsumer for outcomes.
func (t *Transport) EnsureOutcomeConsumer(ctx context.Context, o ConsumerOptions) error {
	_, _, err := ensureConsumer(ctx, t, contracts.SubjectRemediationOutcomes, o)
	return err
}

func ensureConsumer(ctx context.Context, t *Transport, relSubject string, o ConsumerOptions) (jetstream.Consumer, ConsumerOptions, error) {
	o = o.withDefaults(t.opts.Stream, contracts.FullSubject(t.opts.Prefix, relSubject))
	if err := o.validate(); err != nil {
		return nil, o, err
	}
	cons, err := t.opts.JetStream.CreateOrUpdateConsumer(ctx, o.Stream, jetstream.ConsumerConfig{
		Durable:       o.Durable,
		FilterSubject: o.Subject,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       o.AckWait,
		MaxDeliver:    o.MaxDeliver,
		MaxAckPending: o.MaxInFlight,
		DeliverPolicy: jetstream.DeliverNewPolicy,
	})
	if err != nil {
		return nil, o, fmt.Errorf("consumer %s on %s: %w", o.Durable, o.Subject, err)
	}
	return cons, o, nil
}

func consume[T any](ctx context.Context, t *Transport, kind, relSubject string, o ConsumerOptions,
	decode func([]byte) (*T, error), h func(context.Context, *T) error) error {
	if h == nil {
		return errors.New("consumer: handler is required")
	}
	cons, o, err := ensureConsumer(ctx, t, relSubject, o)
	if err != nil {
		return err
	}
	log := t.log.With("durable", o.Durable, "subject_kind", kind)
	d := &dispatcher[T]{t: t, kind: kind, label: relSubject, o: o, log: log, decode: decode, h: h}
	sem := make(chan struct{}, o.MaxInFlight)
	var wg sync.WaitGroup
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return // not acked: redelivered after AckWait
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			d.handle(ctx, msg)
		}()
	}, jetstream.PullMaxMessages(o.MaxInFlight), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		log.Debug("consumer pull error", "err", err)
	}))
	if err != nil {
		return fmt.Errorf("consumer %s: consume: %w", o.Durable, err)
	}
	<-ctx.Done()
	cc.Stop()
	wg.Wait()
	return nil
}

type dispatcher[T any] struct {
	t      *Transport
	kind   string
	label  string // the signed subject (contracts.SignedSubjects)
	o      ConsumerOptions
	log    *slog.Logger
	decode func([]byte) (*T, error)
	h      func(context.Context, *T) error
}

func (d *dispatcher[T]) handle(ctx context.Context, msg jetstream.Msg) {
	//mutate:transport-verifies ./daemon ^(TestUnauthenticatedOutcomesRefused|TestForgedRequestsRefused)$
	if err := d.verify(msg); err != nil {
		// Never handled, never redelivered: counted and logged by the
		// guard.
		if err := msg.TermWithReason(clipReason(err.Error())); err != nil {
			d.log.Warn("terminate message", "err", err)
		}
		return
	}
	v, err := d.decode(msg.Data())
	if err != nil {
		d.t.m.malformed.WithLabelValues(d.kind).Inc()
		d.log.Warn("malformed message terminated", "subject", msg.Subject(), "err", err)
		if err := msg.TermWithReason(clipReason(err.Error())); err != nil {
			d.log.Warn("terminate message", "err", err)
		}
		return
	}
	hctx, cancel := context.WithTimeout(ctx, d.o.AckWait)
	err = d.call(hctx, v)
	cancel()
	if err == nil {
		d.t.m.handled.WithLabelValues(d.kind, "ack").Inc()
		if err := msg.Ack(); err != nil {
			d.log.Warn("ack message", "err", err)
		}
		return
	}
	d.t.m.handled.WithLabelValues(d.kind, "retry").Inc()
	delivered := uint64(1)
	if md, mdErr := msg.Metadata(); mdErr == nil {
		delivered = md.NumDelivered
	}
	switch {
	case ctx.Err() != nil:
		err = msg.Nak() // shutting down: let another worker take it now
	case errors.Is(err, context.DeadlineExceeded):
		d.log.Warn("handler exceeded the ack wait; the message will be redelivered", "ack_wait", d.o.AckWait, "delivered", delivered)
		return
	default:
		if delivered >= uint64(d.o.MaxDeliver) {
			d.log.Error("handler failed on the last delivery; giving up", "err", err, "delivered", delivered)
		} else {
			d.log.Warn("handler failed; message will be redelivered", "err", err, "delivered", delivered)
		}
		err = msg.NakWithDelay(min(d.o.NakDelay*time.Duration(delivered), maxNakDelay))
	}
	if err != nil {
		d.log.Warn("nak message", "err", err)
	}
}

// verify authenticates msg against the time the stream stored it (a
// redelivery is the same message; a copy republished later is stale or
// a duplicate of its Nats-Msg-Id).
func (d *dispatcher[T]) verify(msg jetstream.Msg) error {
	g := d.t.opts.Guard
	if g == nil {
		return nil
	}
	at := time.Time{}
	if md, err := msg.Metadata(); err == nil {
		at = md.Timestamp
	}
	return g.Check(d.label, &nats.Msg{Subject: msg.Subject(), Header: msg.Headers(), Data: msg.Data()}, at, false)
}

func clipReason(s string) string {
	if len(s) > maxTermReason {
		return s[:maxTermReason]
	}
	return s
}

// call runs the handler, turning a panic into an error so one bad message
// cannot take the consumer down.
func (d *dispatcher[T]) call(ctx context.Context, v *T) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panic: %v", p)
		}
	}()
	return d.h(ctx, v)
}
