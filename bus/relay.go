package bus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/contracts"
)

// Relay defaults.
const (
	DefaultRelayInterval   = time.Second
	DefaultRelayAckTimeout = 10 * time.Second
	relayBackoffMin        = 250 * time.Millisecond
	RelayBackoffMax        = 30 * time.Second
	relayPruneEvery        = 10 * time.Minute
	maxBatch               = 4000 // below nats.go's async pending cap
)

// Outbox is what the relay needs from the findings store. PendingEvents
// returns unsent rows in ascending Seq.
type Outbox interface {
	PendingEvents(ctx context.Context, limit int) ([]contracts.OutboxEvent, error)
	MarkSent(ctx context.Context, seqs []int64, at time.Time) error
	PruneSent(ctx context.Context, before time.Time) (int64, error)
	PendingCount(ctx context.Context) (int64, error)
}

// OutboxAfter is what an Outbox may also offer: the unsent rows after a
// seq (in ascending Seq, up to limit). With it the relay reads and
// publishes the next window while the previous one's acks are on their
// way.
type OutboxAfter interface {
	PendingEventsAfter(ctx context.Context, after int64, limit int) ([]contracts.OutboxEvent, error)
}

// OutboxResend is what an Outbox may also offer: the row of a state
// change this database numbered n as the writer it is now (found false:
// none, or capture is off), and whether the stream acknowledged it.
type OutboxResend interface {
	OwnStateChange(ctx context.Context, n uint64) (row contracts.OutboxEvent, found, sent bool, err error)
}

// Publisher is the part of jetstream.JetStream the relay uses.
type Publisher interface {
	PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error)
}

var _ Publisher = (jetstream.JetStream)(nil)

// RelayOptions configure a Relay. Zero durations and sizes take defaults.
type RelayOptions struct {
	Outbox    Outbox
	JetStream Publisher
	Prefix    string // subject prefix, e.g. "patrol"
	Source    string // CloudEvents source; "" = contracts.DefaultSource()
	// DataRef, when set, gives an event's dataref attribute ("": none).
	DataRef   func(contracts.OutboxEvent) string
	Batch     int // rows per publish window
	Retention time.Duration
	// Interval is the polling fallback between kicks.
	Interval time.Duration
	// AckTimeout bounds the wait for one window's acks.
	AckTimeout time.Duration
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Now        func() time.Time
	// Guard signs every message (nil: unsigned).
	Guard *Guard
}

// Relay publishes outbox rows to JetStream in Seq order and marks them sent
// after the ack. Each row's id is the Nats-Msg-Id, so a row republished
// after a crash or a lost ack is dropped by the stream's duplicate window.
type Relay struct {
	opts    RelayOptions
	kick    chan struct{}
	retry   chan struct{} // like kick, but also ends a backoff
	mu      sync.Mutex    // serialises Flush
	lastPrn time.Time
	m       relayMetrics

	// acked is what WaitStored waits on:
	//   - every row this relay read with a seq up to sent is on the stream;
	//   - moved is closed, and replaced, each time sent moves.
	ackMu sync.Mutex
	sent  int64
	moved chan struct{}

	// resends are the state change numbers to publish again (Resend).
	resendMu sync.Mutex
	resends  map[uint64]bool
}

// NewRelay validates the options and registers the outbox metrics.
func NewRelay(o RelayOptions) (*Relay, error) {
	switch {
	case o.Outbox == nil:
		return nil, errors.New("relay: Outbox is required")
	case o.JetStream == nil:
		return nil, errors.New("relay: JetStream is required")
	case !contracts.ValidToken(o.Prefix):
		return nil, fmt.Errorf("relay: Prefix %q is not a single NATS subject token", o.Prefix)
	case o.Batch < 0 || o.Batch > maxBatch:
		return nil, fmt.Errorf("relay: Batch must be 0..%d, got %d", maxBatch, o.Batch)
	case o.Retention < 0 || o.Interval < 0 || o.AckTimeout < 0:
		return nil, errors.New("relay: Retention, Interval and AckTimeout must not be negative")
	}
	setNum(&o.Batch, DefaultOutboxBatch)
	setNum(&o.Retention, DefaultOutboxRetention)
	setNum(&o.Interval, DefaultRelayInterval)
	setNum(&o.AckTimeout, DefaultRelayAckTimeout)
	setStr(&o.Source, contracts.DefaultSource())
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	m, err := newRelayMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	o.Logger = o.Logger.With("component", "outbox_relay")
	return &Relay{opts: o, kick: make(chan struct{}, 1), retry: make(chan struct{}, 1), m: m, moved: make(chan struct{}),
		resends: map[uint64]bool{}}, nil
}

// WaitStored returns nil once the stream acknowledged every outbox row up
// to seq (rows committed after the relay started), or ctx's error,
// naming seq and how far the stream has them, when ctx ends first. An
// API answer waits on it so that it never reports a change the stream
// does not hold.
func (r *Relay) WaitStored(ctx context.Context, seq int64) error {
	r.Kick()
	for {
		r.ackMu.Lock()
		sent, moved := r.sent, r.moved
		r.ackMu.Unlock()
		if sent >= seq {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("outbox row %d is not on the stream yet (acknowledged through %d): %w", seq, sent, ctx.Err())
		case <-moved:
		}
	}
}

// stored records that the stream acknowledged every row up to seq.
func (r *Relay) stored(seq int64) {
	r.ackMu.Lock()
	defer r.ackMu.Unlock()
	if seq > r.sent {
		r.sent = seq
		close(r.moved)
		r.moved = make(chan struct{})
	}
}

// Kick wakes the relay now, e.g. right after a commit that wrote rows. It
// never blocks.
func (r *Relay) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Retry wakes the relay now, even while it backs off after a failure: a
// replica found one of this writer's changes missing from the stream,
// so the stream answers again. It never blocks.
func (r *Relay) Retry() {
	select {
	case r.retry <- struct{}{}:
	default:
	}
}

// Resend asks the relay to publish the state change numbered n again,
// before any newer row: the writer's follower found it missing from the
// stream while later ones are there (docs/CLUSTER.md). It never blocks.
func (r *Relay) Resend(n uint64) {
	r.resendMu.Lock()
	r.resends[n] = true
	r.resendMu.Unlock()
	r.Retry()
}

// Run publishes until ctx ends: after every Kick, every Interval, and with
// exponential backoff (capped at 30 s) while publishing fails. It returns
// nil when ctx is cancelled.
func (r *Relay) Run(ctx context.Context) error {
	backoff := time.Duration(0)
	for {
		err := r.Flush(ctx)
		if ctx.Err() != nil {
			return nil
		}
		wait := r.opts.Interval
		if err != nil {
			backoff = min(max(2*backoff, relayBackoffMin), RelayBackoffMax)
			wait = backoff
			r.opts.Logger.Warn("outbox publish failed, retrying", "err", err, "retry_in", backoff)
		} else {
			backoff = 0
			r.prune(ctx)
		}
		timer := time.NewTimer(wait)
		kick := r.kick
		if err != nil {
			kick = nil // a kick must not cut a backoff short
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		case <-kick:
			timer.Stop()
		case <-r.retry:
			timer.Stop()
			backoff = 0
		}
	}
}

// Flush publishes every row pending when it is called, window by window,
// and returns the first error. Rows are marked sent only after their ack,
// and only as an unbroken prefix, so nothing is skipped or reordered.
// When the Outbox offers OutboxAfter (and two windows fit under the
// client's async publish cap), the next window is read and published
// while the previous one's acks arrive; a window is still marked only
// once every window before it was.
func (r *Relay) Flush(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.updatePending(ctx)
	// A change the stream lost goes again before anything newer.
	//mutate:relay-republishes-lost-change ./cluster ^TestWriterRepublishesALostChange$
	if r.resendAsked() {
		if err := r.resend(ctx); err != nil {
			return err
		}
	}
	after, pipelined := r.opts.Outbox.(OutboxAfter)
	pipelined = pipelined && 2*r.opts.Batch <= maxBatch
	var prev *window // published, acks not yet awaited
	for {
		var rows []contracts.OutboxEvent
		var err error
		if prev != nil {
			rows, err = after.PendingEventsAfter(ctx, prev.rows[len(prev.rows)-1].Seq, r.opts.Batch)
		} else {
			rows, err = r.opts.Outbox.PendingEvents(ctx, r.opts.Batch)
		}
		if err != nil {
			if prev != nil {
				if serr := r.settle(ctx, prev); serr != nil {
					return serr
				}
			}
			return fmt.Errorf("read outbox: %w", err)
		}
		var cur *window
		if len(rows) > 0 {
			cur = r.publish(rows)
		}
		if prev != nil {
			if err := r.settle(ctx, prev); err != nil {
				if cur != nil {
					// Sent, but not marked: published again on the next
					// attempt (the stream drops what it already has).
					r.m.failures.Add(float64(len(cur.rows)))
				}
				return err
			}
		}
		if cur == nil {
			return nil
		}
		if !pipelined || cur.sendErr != nil || len(rows) < r.opts.Batch {
			if err := r.settle(ctx, cur); err != nil || len(rows) < r.opts.Batch {
				return err
			}
			continue
		}
		prev = cur
	}
}

// resendAsked says whether Resend asked for a change since the last pass.
func (r *Relay) resendAsked() bool {
	r.resendMu.Lock()
	defer r.resendMu.Unlock()
	return len(r.resends) > 0
}

// resend publishes again each state change Resend asked for, one at a
// time, each acknowledged before the next and before any newer row. One
// the stream has not acknowledged yet is left to Flush. A failure keeps
// the rest asked for.
func (r *Relay) resend(ctx context.Context) error {
	r.resendMu.Lock()
	asked := slices.Sorted(maps.Keys(r.resends))
	clear(r.resends)
	r.resendMu.Unlock()
	for i, n := range asked {
		if err := r.resendOne(ctx, n); err != nil {
			r.resendMu.Lock()
			for _, k := range asked[i:] {
				r.resends[k] = true
			}
			r.resendMu.Unlock()
			return err
		}
	}
	return nil
}

// resendOne publishes the sent row of state change n again, signed anew
// under a fresh message id: the stream's duplicate window would drop
// the row's own id. Replicas skip a number they applied already.
func (r *Relay) resendOne(ctx context.Context, n uint64) error {
	out, ok := r.opts.Outbox.(OutboxResend)
	if !ok {
		return nil
	}
	row, found, sent, err := out.OwnStateChange(ctx, n)
	if err != nil {
		return fmt.Errorf("re-publish state change %d: %w", n, err)
	}
	if !found {
		r.opts.Logger.Warn("state change not re-published: this instance is not writing, or the change is not of its epoch", "n", n)
		return nil
	}
	if !sent {
		return nil // still pending: published in turn
	}
	msg, err := r.messageID(row, resendID(row.ID), contracts.HeaderRepublished, strconv.FormatUint(n, 10))
	if err != nil {
		return fmt.Errorf("re-publish state change %d (outbox seq %d): %w", n, row.Seq, err)
	}
	var seq uint64
	f, err := r.opts.JetStream.PublishMsgAsync(msg)
	if err == nil {
		timer := time.NewTimer(r.opts.AckTimeout)
		select {
		case a := <-f.Ok():
			seq = a.Sequence
		case err = <-f.Err():
		case <-timer.C:
			err = fmt.Errorf("no ack within %s", r.opts.AckTimeout)
		case <-ctx.Done():
			err = ctx.Err()
		}
		timer.Stop()
	}
	if err != nil {
		r.m.failures.Inc()
		return fmt.Errorf("re-publish state change %d (outbox seq %d): %w", n, row.Seq, err)
	}
	r.m.republished.Inc()
	r.opts.Logger.Warn("state change missing from the stream: published again from the outbox", "n", n, "outbox_seq", row.Seq,
		"msg_id", msg.Header.Get(jetstream.MsgIDHeader), "stream_seq", seq)
	return nil
}

// resendID is a fresh message id for a row published again: its id and
// a random suffix, so no earlier attempt's id swallows it.
func resendID(id string) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return id + "-re-" + hex.EncodeToString(b[:])
}

// window is one publish window: its rows, the futures of those sent, and
// the error that stopped sending the rest.
type window struct {
	rows    []contracts.OutboxEvent
	futures []jetstream.PubAckFuture
	sendErr error
}

// publish sends rows asynchronously, in order, until one fails.
func (r *Relay) publish(rows []contracts.OutboxEvent) *window {
	w := &window{rows: rows, futures: make([]jetstream.PubAckFuture, 0, len(rows))}
	for _, row := range rows {
		msg, err := r.message(row)
		if err == nil {
			var f jetstream.PubAckFuture
			if f, err = r.opts.JetStream.PublishMsgAsync(msg); err == nil {
				w.futures = append(w.futures, f)
				continue
			}
		}
		w.sendErr = fmt.Errorf("publish outbox seq %d (id %s): %w", row.Seq, row.ID, err)
		break
	}
	return w
}

// settle waits for a window's acks in order, marks the acked prefix sent
// and returns the first failure.
func (r *Relay) settle(ctx context.Context, w *window) error {
	acked, err := r.awaitAcks(ctx, w.rows, w.futures)
	if err == nil {
		err = w.sendErr // an earlier row's failure comes first
	}
	if acked > 0 {
		// On the stream, marked or not.
		r.stored(w.rows[acked-1].Seq)
		seqs := make([]int64, acked)
		for i := range seqs {
			seqs[i] = w.rows[i].Seq
		}
		if merr := r.opts.Outbox.MarkSent(ctx, seqs, r.opts.Now()); merr != nil {
			return fmt.Errorf("mark %d outbox rows sent: %w", acked, merr)
		}
		r.m.published.Add(float64(acked))
	}
	if err != nil {
		r.m.failures.Add(float64(len(w.rows) - acked))
	}
	return err
}

// awaitAcks waits for the futures in order and counts the unbroken prefix
// of acks. A timeout or a cancelled ctx stops the wait.
func (r *Relay) awaitAcks(ctx context.Context, rows []contracts.OutboxEvent, futures []jetstream.PubAckFuture) (int, error) {
	timer := time.NewTimer(r.opts.AckTimeout)
	defer timer.Stop()
	acked := 0
	var firstErr error
	for i, f := range futures {
		var err error
		stop := false
		select {
		case <-f.Ok():
		case err = <-f.Err():
		case <-timer.C:
			err, stop = fmt.Errorf("no ack within %s", r.opts.AckTimeout), true
		case <-ctx.Done():
			err, stop = ctx.Err(), true
		}
		if err == nil {
			if firstErr == nil {
				acked++
			}
			continue
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("publish outbox seq %d (id %s): %w", rows[i].Seq, rows[i].ID, err)
		}
		if stop {
			break
		}
	}
	return acked, firstErr
}

func (r *Relay) message(row contracts.OutboxEvent) (*nats.Msg, error) {
	return r.messageID(row, "")
}

// messageID is message under the message id id ("": the row's), with
// the headers given as name, value pairs (signed with the rest).
func (r *Relay) messageID(row contracts.OutboxEvent, id string, header ...string) (*nats.Msg, error) {
	ref := ""
	if r.opts.DataRef != nil {
		ref = r.opts.DataRef(row)
	}
	m, err := EventMessageRef(r.opts.Prefix, r.opts.Source, ref, row)
	if err == nil && id != "" {
		m.Header.Set(jetstream.MsgIDHeader, id)
	}
	for i := 0; err == nil && i+1 < len(header); i += 2 {
		m.Header.Set(header[i], header[i+1])
	}
	if err == nil {
		r.opts.Guard.Sign(m)
	}
	return m, err
}

func (r *Relay) prune(ctx context.Context) {
	now := r.opts.Now()
	if !r.lastPrn.IsZero() && now.Sub(r.lastPrn) < relayPruneEvery {
		return
	}
	r.lastPrn = now
	n, err := r.opts.Outbox.PruneSent(ctx, now.Add(-r.opts.Retention))
	if err != nil {
		r.opts.Logger.Warn("prune sent outbox rows", "err", err)
		return
	}
	if n > 0 {
		r.opts.Logger.Debug("pruned sent outbox rows", "rows", n)
	}
}

func (r *Relay) updatePending(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	n, err := r.opts.Outbox.PendingCount(ctx)
	if err != nil {
		r.opts.Logger.Warn("count pending outbox rows", "err", err)
		return
	}
	r.m.pending.Set(float64(n))
}
