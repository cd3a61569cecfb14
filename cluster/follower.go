// The follower keeps a standby's SQLite in step with the leader's over
// NATS (cluster mode). The leader's store captures every committed row
// change into its outbox (store.EnableCapture); the relay publishes those
// rows, like every other event, on `<prefix>.state.changes` in the patrol
// stream (R3 on a NATS cluster). A Follower reads that subject in stream
// order from the sequence after the one its database applied last and
// applies each change once (store.ApplyState). CatchUp waits until the
// database has applied the stream's last state change: a standby that
// wins the lease calls it before its first run, so nothing it already
// applied is filed or published again.

package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/store/records"
)

const (
	retryMin  = 100 * time.Millisecond
	retryMax  = 5 * time.Second
	pollEvery = 50 * time.Millisecond
)

// FollowerOptions configure a Follower.
type FollowerOptions struct {
	JetStream jetstream.JetStream
	Stream    string // the patrol stream
	Prefix    string // subject prefix
	Store     Store
	Instance  string // this instance's stable name (state changes it wrote are not re-applied)
	Logger    *slog.Logger
	Now       func() time.Time
	// Guard verifies every state change against the deployment key; one
	// that does not verify is skipped like a malformed one (nil: none is
	// verified).
	Guard *bus.Guard
	// StallAfter bounds a stall: behind the stream with nothing applied
	// for that long, the follower re-subscribes (0: DefaultStallAfter).
	StallAfter time.Duration
	// HoldFor bounds the wait for a change missing from the stream while
	// later ones arrived (0: DefaultHoldFor); then it is a gap.
	HoldFor time.Duration
	// Republish, when set, makes this instance's relay publish what it
	// has not stored yet now, and again the change numbered missing when
	// the stream lost it: called when its own change is missing.
	Republish func(missing uint64)
}

// DefaultHoldFor is FollowerOptions.HoldFor's default: the bound of the
// default lease TTL.
var DefaultHoldFor = HoldBound(bus.DefaultLeaseTTL)

// HoldBound is the hold bound for a lease TTL: one TTL, at least 2 s. A
// writer's relay retries a publish well within it once the stream
// answers again.
func HoldBound(leaseTTL time.Duration) time.Duration {
	return max(leaseTTL, 2*time.Second)
}

// ReadyAfterHealBound is how soon after a partition heals every instance
// is ready again, for a lease TTL: a stalled consumer is replaced, the
// relay's longest backoff ends, a change read ahead waits its hold bound
// and the first re-seed is asked for (docs/CLUSTER.md "Partitions and
// bounds").
func ReadyAfterHealBound(leaseTTL time.Duration) time.Duration {
	return StallBound(leaseTTL) + bus.RelayBackoffMax + HoldBound(leaseTTL) + ReseedRetryMin
}

// maxHeld bounds the changes held behind a missing one.
const maxHeld = 10000

// DefaultStallAfter is FollowerOptions.StallAfter's default: the bound
// of the default lease TTL.
var DefaultStallAfter = StallBound(bus.DefaultLeaseTTL)

// StallBound is the stall bound for a lease TTL: a third of it (the
// lease's renewal period), at least a second. A standby that re-subscribes
// within it stays warm enough to take over within two TTLs.
func StallBound(leaseTTL time.Duration) time.Duration {
	return max(leaseTTL/3, time.Second)
}

// Follower applies the state-change stream to the local store.
type Follower struct {
	o   FollowerOptions
	log *slog.Logger

	// applyMu is held while a change is applied and while the database
	// is re-seeded, so neither sees the other half done.
	applyMu sync.Mutex

	mu      sync.Mutex
	lastErr error
	dropped uint64            // changes refused as malformed
	gap     *records.GapError // changes missing from the stream: cannot catch up
	// diverged: the database holds rows the stream never got (Diverged).
	diverged records.Divergence
	restart  context.CancelFunc // ends the consumer in use: Run starts another
	// resubscribes counts the consumers ended for a stall.
	resubscribes uint64
	// consumerSince is when the consumer in use was subscribed; zero
	// while none is (one is coming up). A stall is counted from it.
	consumerSince time.Time
	// applyErr: the last change could not be applied (a full disk, a
	// read-only file); nil once one is.
	applyErr error
	// divergedRows counts the rows dropped or fenced for a divergence
	// since the start.
	divergedRows atomic.Uint64
	// diverging is signalled when a running follower finds the database
	// diverged (its own change fenced).
	diverging chan struct{}
	// unhandled is an own change applied as fenced whose handling
	// (fencedOwn) failed; only the consumer loop touches it. The change
	// is applied, so the stream never delivers it again: the next
	// consumer handles it before it reads on.
	unhandled *fencedChange

	// Holding (the consumer loop's): held are the changes read since
	// one arrived ahead of its number, in stream order; heldBase is the
	// sequence before the first.
	held     []heldChange
	heldBase uint64
	// waitN is the number held changes wait for, since waitSince (kept
	// across consumers, so a new one does not restart the bound); early
	// names the changes applied ahead of their stream position (seq to
	// number), so a new consumer skips them.
	waitN     uint64
	waitSince time.Time
	early     map[uint64]uint64
	// scanTo, once the bound passed, is the stream's last state change
	// when it did: the missing number may still be stored before it (a
	// publish retried late), so it is a gap only once read that far.
	scanTo uint64
	// duplicates counts the changes skipped as a number applied before.
	duplicates atomic.Uint64
	// gone is why the state stream is not found now (nil: it is, or the
	// last lookup could not tell), since goneSince; lost counts the times
	// it went.
	gone      error
	goneSince time.Time
	lost      atomic.Uint64
	// created is when the stream the consumer reads was created (zero:
	// not known); newer says a lookup found another one since: it was
	// created again, and the next consumer reads it from its start.
	created time.Time
	newer   bool
	// gaps counts the gaps found; gapped is signalled at each.
	gaps   atomic.Uint64
	gapped chan struct{}
	// refused is the last change refused (unsigned, another key, a
	// format this build cannot read) since a numbered change applied in
	// turn: the database may lack it (Refused).
	refused error
}

// fencedChange is an own change the stream fenced, at its sequence.
type fencedChange struct {
	seq uint64
	c   contracts.StateChange
}

// NewFollower validates the options.
func NewFollower(o FollowerOptions) (*Follower, error) {
	switch {
	case o.JetStream == nil:
		return nil, errors.New("cluster: follower: JetStream is required")
	case o.Store == nil:
		return nil, errors.New("cluster: follower: Store is required")
	case o.Stream == "" || o.Prefix == "":
		return nil, errors.New("cluster: follower: Stream and Prefix are required")
	case o.Instance == "":
		return nil, errors.New("cluster: follower: Instance is required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.StallAfter <= 0 {
		o.StallAfter = DefaultStallAfter
	}
	if o.HoldFor <= 0 {
		o.HoldFor = DefaultHoldFor
	}
	return &Follower{o: o, log: o.Logger.With("component", "replica", "instance", o.Instance), diverging: make(chan struct{}, 1),
		early: map[uint64]uint64{}, gapped: make(chan struct{}, 1)}, nil
}

// FullSubject is the subject state changes are published on.
func (f *Follower) FullSubject() string {
	return contracts.FullSubject(f.o.Prefix, contracts.SubjectStateChanges)
}

// EnableCapture makes the store write state-change events (the leader)
// stamped with epoch, the leader lease's term, and queues the epoch
// marker first.
func (f *Follower) EnableCapture(ctx context.Context, epoch uint64) error {
	return f.o.Store.EnableCapture(ctx, contracts.SubjectStateChanges, f.o.Instance, epoch)
}

// AwaitEpoch returns once the database applied an epoch marker of at
// least epoch from the stream (Run must be running), or with ctx's error.
// A new writer waits for its own marker. So every change of an older
// writer that precedes it in the stream is applied before its first
// write. Every one after it is fenced, on every replica alike.
func (f *Follower) AwaitEpoch(ctx context.Context, epoch uint64) error {
	return f.await(ctx, func(st records.ReplicaStatus) error {
		if st.AppliedEpoch >= epoch {
			return nil
		}
		return fmt.Errorf("await epoch %d (applied %d)", epoch, st.AppliedEpoch)
	})
}

// await polls the replica status until done answers nil, or returns its
// last answer wrapped with ctx's error.
func (f *Follower) await(ctx context.Context, done func(records.ReplicaStatus) error) error {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		st, err := f.o.Store.ReplicaStatus(ctx)
		if err != nil {
			return err
		}
		notYet := done(st)
		if notYet == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", notYet, ctx.Err())
		case <-t.C:
		}
	}
}

// Run applies state changes until ctx ends, resuming after the applied
// sequence; it reconnects with backoff after errors and returns nil when
// ctx is cancelled.
func (f *Follower) Run(ctx context.Context) error {
	done := make(chan struct{})
	defer func() { <-done }()
	go func() { defer close(done); f.watchStall(ctx) }()
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		err := f.follow(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			// Restarted on purpose (a re-seed moved the sequence).
			backoff = 0
			continue
		}
		f.mu.Lock()
		f.lastErr = err
		f.mu.Unlock()
		backoff = min(max(2*backoff, retryMin), retryMax)
		f.log.Warn("state stream interrupted, resuming", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
	}
	return nil
}

// follow reads the stream from the sequence after the applied one until
// ctx ends, an error, or a restart (nil).
func (f *Follower) follow(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f.mu.Lock()
	f.restart = cancel
	f.mu.Unlock()
	//mutate:fenced-own-change-retried ./cluster ^TestResumedWriterReseedsItself$
	if u := f.unhandled; u != nil {
		f.applyMu.Lock()
		err := f.fencedOwn(ctx, u.seq, u.c)
		f.applyMu.Unlock()
		if err != nil {
			return fmt.Errorf("own change fenced at seq %d, not handled yet: %w", u.seq, err)
		}
		f.unhandled = nil
	}
	if err := f.followStream(ctx); err != nil {
		return err
	}
	st, err := f.o.Store.ReplicaStatus(ctx)
	if err != nil {
		return err
	}
	f.held = nil // the new consumer reads them again
	f.mu.Lock()
	for seq := range f.early {
		if seq <= st.AppliedSeq {
			delete(f.early, seq)
		}
	}
	f.mu.Unlock()
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{f.FullSubject()}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if st.AppliedSeq > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, st.AppliedSeq+1
	}
	cons, err := f.o.JetStream.OrderedConsumer(ctx, f.o.Stream, cfg)
	if err != nil {
		return fmt.Errorf("state consumer: %w", err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("state consumer: %w", err)
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer it.Stop()
	f.subscribed(time.Now())
	defer f.subscribed(time.Time{})
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("state consumer: %w", err)
		}
		if err := f.apply(ctx, msg); err != nil {
			return err
		}
	}
}

func (f *Follower) apply(ctx context.Context, msg jetstream.Msg) error {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	if ctx.Err() != nil {
		return nil // a re-seed restarted the stream: this consumer is done
	}
	md, err := msg.Metadata()
	if err != nil {
		return fmt.Errorf("state message metadata: %w", err)
	}
	seq := md.Sequence.Stream
	var c contracts.StateChange
	err = f.o.Guard.Check(contracts.SubjectStateChanges, &nats.Msg{Subject: msg.Subject(), Header: msg.Headers(), Data: msg.Data()}, md.Timestamp, false)
	logged := err != nil // the guard logs a sender once
	//mutate:follower-verifies:always ./cluster ^TestForgedStateChangesRefused$
	if err == nil {
		c, err = Decode(msg.Data())
		// Verified with the rest of the message: a re-publish may be
		// skipped as a number applied before, nothing else.
		c.Republished = msg.Headers().Get(contracts.HeaderRepublished) != ""
	}
	var bad *RowError
	switch {
	//mutate:follower-skips-bad-row ./cluster ^TestUndecodableRowIsABugReport
	case errors.As(err, &bad):
		// A verified change with a row no column holds: a bug of the
		// writer's. It is skipped (logged, counted), keeping its number,
		// so the replica goes on: a bug report, never a wedge.
		f.mu.Lock()
		f.dropped++
		f.mu.Unlock()
		f.log.Error("state change skipped: its row cannot be stored (a bug in the writer, please report it)", "seq", seq, "err", err)
		skip := contracts.SkipChange(f.o.Instance)
		skip.N, skip.Epoch = bad.Change.N, bad.Change.Epoch
		c = skip
	case err != nil:
		// A malformed or unauthenticated change is skipped (and
		// counted), never applied in part; what the store holds stays as
		// it was.
		f.mu.Lock()
		f.dropped++
		f.mu.Unlock()
		if !logged {
			f.log.Error("state change refused", "seq", seq, "err", err)
		}
		f.mu.Lock()
		f.refused = fmt.Errorf("state change at seq %d refused (a peer of another build or key?): %w", seq, err)
		f.mu.Unlock()
		c = contracts.SkipChange(f.o.Instance) // advances the sequence only
	}
	if n, ok := f.early[seq]; ok && n == c.N {
		// Applied ahead of its turn by an earlier consumer: only the
		// sequence moves.
		c = contracts.SkipChange(f.o.Instance)
	}
	if len(f.held) > 0 {
		return f.applyHeld(ctx, heldChange{seq: seq, c: c})
	}
	return f.applyNext(ctx, seq, c)
}

// followStream records which stream the next consumer reads. One
// created again since this database last read (a lost JetStream store,
// a deleted stream) starts its sequences over: the database's position
// goes back to its start, where the writer's next changes are. A lookup
// that fails changes nothing.
func (f *Follower) followStream(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, SeedCallWait)
	s, err := f.o.JetStream.Stream(lctx, f.o.Stream)
	cancel()
	if err != nil {
		return nil
	}
	created := s.CachedInfo().Created
	restart, err := f.o.Store.FollowStream(ctx, created.UnixNano())
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.created, f.newer = created, false
	if restart {
		f.forgetWaits()
	}
	f.mu.Unlock()
	if restart {
		f.scanTo = 0
		f.log.Error("state stream created again (its sequences start over): reading it from its start; the change numbers say what applies",
			"stream", f.o.Stream, "created", created)
	}
	return nil
}

// noteCreated records a lookup's creation time of the stream: another
// than the consumer's means the stream was created again.
func (f *Follower) noteCreated(created time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.created.IsZero() && !created.Equal(f.created) {
		f.newer = true
	}
}

// takeNewer says whether a lookup found the stream created again since
// the consumer started, and clears it.
func (f *Follower) takeNewer() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.newer
	f.newer = false
	return n
}

// applyNext applies the change at seq, holding it back when an earlier
// number is still missing from the stream.
func (f *Follower) applyNext(ctx context.Context, seq uint64, c contracts.StateChange) error {
	err := f.applyOne(ctx, seq, c)
	var gap *records.GapError
	if !errors.As(err, &gap) {
		return err
	}
	// The stream may store the writer's changes out of order (a publish
	// retried after its stream leader moved): wait for the earlier ones,
	// up to the hold bound, before calling it a gap.
	//mutate:follower-holds-ahead-change ./cluster ^TestFollowerWaitsForAnEarlierChange
	if gap.Got > gap.Want && (!f.holdExpired(gap) || c.Origin == f.o.Instance || f.scanAhead(ctx, seq)) {
		return f.hold(ctx, gap, heldChange{seq: seq, c: c})
	}
	return f.gapFound(gap)
}

// scanAhead says whether the stream stores state changes after seq that
// were not read yet, once the hold bound passed: the missing number may
// be among them (a publish retried after the bound). It records how far
// to read before calling it a gap.
func (f *Follower) scanAhead(ctx context.Context, seq uint64) bool {
	if f.scanTo != 0 {
		return f.scanTo > seq
	}
	lctx, cancel := context.WithTimeout(ctx, SeedCallWait)
	last, err := f.LastSeq(lctx)
	cancel()
	f.scanTo = seq // read as far as seq: nothing stored after it
	//mutate:gap-scans-ahead ./cluster ^TestLateChangeAfterTheHoldBoundApplies$
	if err == nil && last > seq {
		f.scanTo = last
	}
	return f.scanTo > seq
}

// heldChange is a change read ahead of its number's turn, at its
// sequence; early: it was applied already (it is the missing one).
type heldChange struct {
	seq   uint64
	c     contracts.StateChange
	early bool
}

// hold starts holding h back: the changes after it are held too, in
// stream order, until the missing number arrives or the bound ends.
func (f *Follower) hold(ctx context.Context, gap *records.GapError, hs ...heldChange) error {
	h := hs[0]
	f.held, f.heldBase = hs, h.seq-1
	f.mu.Lock()
	own := h.c.Origin == f.o.Instance
	past := false
	switch {
	case f.waitN != gap.Want:
		f.waitN, f.waitSince, f.scanTo = gap.Want, time.Now(), 0
		f.log.Info("state change read ahead of an earlier one: waiting for it", "seq", h.seq, "want", gap.Want, "got", gap.Got,
			"bound", f.o.HoldFor)
	case own && time.Since(f.waitSince) >= f.o.HoldFor:
		// Its own change: never a gap, it has it (ownMissing).
		f.waitSince, past = time.Now(), true
	}
	left := f.o.HoldFor - time.Since(f.waitSince)
	restart := f.restart
	f.mu.Unlock()
	if left <= 0 && !own {
		// Past the bound, reading on to scanTo (scanAhead): no restart.
		return nil
	}
	if past {
		if filled, err := f.ownMissing(ctx, gap.Want); filled || err != nil {
			return err
		}
	} else if own && f.o.Republish != nil {
		// Its own change is missing: publish it again, before anything newer.
		f.o.Republish(gap.Want)
	}
	// When nothing else arrives, the consumer ends at the bound and the
	// next one finds it passed.
	t := time.AfterFunc(max(left, 0)+10*time.Millisecond, func() {
		if ctx.Err() == nil && restart != nil {
			restart()
		}
	})
	context.AfterFunc(ctx, func() { t.Stop() })
	return nil
}

// ownMissing handles this instance's own change want, missing from the
// stream past the hold bound while later ones are there:
//   - the writer publishes it again (Republish);
//   - a deposed writer cannot, and no other instance has the change: it
//     holds the change's rows, so it applies its own record of it (from
//     its outbox) and reads on. Caught up, it serves the copy the
//     standbys that lack the change re-seed from.
//
// filled says the change was applied from the record.
func (f *Follower) ownMissing(ctx context.Context, want uint64) (filled bool, err error) {
	c, capturing, found, err := f.o.Store.OwnRecord(ctx, want, f.o.Instance)
	if err != nil {
		return false, err
	}
	// The writer publishes it again, so the standbys need no re-seed.
	//mutate:deposed-writer-fills-own-change:always ./cluster ^TestDeposedWriterNeverRepublishes$
	if !found || capturing {
		f.log.Warn("own state change missing from the stream: publishing it again", "want", want, "seq", f.held[0].seq)
		if f.o.Republish != nil {
			f.o.Republish(want)
		}
		return false, nil
	}
	res, err := f.o.Store.ApplyState(ctx, f.heldBase, f.o.Instance, c, f.o.Now())
	if err != nil || res != records.Applied {
		return false, f.applied(ctx, f.heldBase, c, res, err)
	}
	f.log.Warn("own state change missing from the stream, and this instance no longer writes: applied from its own record; "+
		"instances that lack it re-seed from a caught-up one", "n", want, "epoch", c.Epoch, "change", changeName(c))
	held := f.held
	f.held = nil
	return true, f.replay(ctx, held)
}

// holdExpired reports whether the wait for gap's missing number passed
// its bound.
func (f *Follower) holdExpired(gap *records.GapError) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waitN == gap.Want && time.Since(f.waitSince) >= f.o.HoldFor
}

// applyHeld takes the next change while others are held: the missing
// number applies at once (the sequence stays), then the held ones in
// stream order; anything else joins them.
func (f *Follower) applyHeld(ctx context.Context, h heldChange) error {
	if len(f.held) >= maxHeld {
		return f.gapFound(&records.GapError{Seq: f.held[0].seq, Want: f.waitN, Got: f.held[0].c.N})
	}
	f.held = append(f.held, h)
	before, err := f.o.Store.ReplicaStatus(ctx)
	if err != nil {
		return err
	}
	//mutate:held-only-numbered-fills ./cluster ^TestEarlyAppliedChangeStaysApplied$
	if h.c.N == 0 {
		// Only a numbered change can be the missing one. A marker, a
		// refused change or one applied ahead already (its record made
		// a skip) waits its turn: applied ahead at a sequence past the
		// applied one, it would count as the missing number, and its
		// record of an early apply would be lost.
		return f.heldLonger(ctx)
	}
	res, err := f.o.Store.ApplyState(ctx, f.heldBase, f.o.Instance, h.c, f.o.Now())
	if err != nil || res != records.Applied {
		var gap *records.GapError
		if errors.As(err, &gap) || err == nil {
			return f.heldLonger(ctx)
		}
		return f.applied(ctx, f.heldBase, h.c, res, err)
	}
	f.held[len(f.held)-1].early = true
	f.mu.Lock()
	f.early[h.seq] = h.c.N
	f.mu.Unlock()
	f.log.Info("state change applied ahead of those read before it: its number was missing", "seq", h.seq, "n", h.c.N,
		"held", len(f.held)-1, "applied_seq", before.AppliedSeq)
	held := f.held
	f.held = nil
	return f.replay(ctx, held)
}

// replay applies the changes held behind a missing number, now applied,
// in stream order; one applied ahead already (early) only moves the
// sequence.
func (f *Follower) replay(ctx context.Context, held []heldChange) error {
	for i, x := range held {
		c := x.c
		if x.early {
			c = contracts.SkipChange(f.o.Instance)
		}
		err := f.applyOne(ctx, x.seq, c)
		if ctx.Err() != nil {
			// Restarted mid-replay: what applied stays, the next
			// consumer reads the rest from the applied sequence.
			f.held = nil
			return nil
		}
		var gap *records.GapError
		if errors.As(err, &gap) && gap.Got > gap.Want {
			// Another number is missing: hold the rest.
			return f.hold(ctx, gap, held[i:]...)
		}
		if gap != nil {
			return f.gapFound(gap)
		}
		if err != nil {
			f.held, f.heldBase = held[i:], x.seq-1
			return err
		}
	}
	f.mu.Lock()
	f.waitN, f.waitSince = 0, time.Time{}
	f.mu.Unlock()
	f.scanTo = 0
	return nil
}

// heldLonger checks the bound while changes are held.
func (f *Follower) heldLonger(ctx context.Context) error {
	f.mu.Lock()
	want, since := f.waitN, f.waitSince
	f.mu.Unlock()
	if time.Since(since) < f.o.HoldFor {
		return nil
	}
	if last := f.held[len(f.held)-1].seq; f.held[0].c.Origin != f.o.Instance && f.scanAhead(ctx, last) {
		return nil // read on: the missing one may be stored later
	}
	if f.held[0].c.Origin == f.o.Instance {
		// Its own change: this instance has it. Never a gap.
		f.mu.Lock()
		f.waitSince = time.Now()
		f.mu.Unlock()
		_, err := f.ownMissing(ctx, want)
		return err
	}
	return f.gapFound(&records.GapError{Seq: f.held[0].seq, Want: want, Got: f.held[0].c.N})
}

// gapFound records a gap no wait closes: changes are missing from the
// stream for good. It is logged once; the instance re-seeds itself.
func (f *Follower) gapFound(gap *records.GapError) error {
	f.held, f.scanTo = nil, 0
	f.mu.Lock()
	first := f.gap == nil
	f.gap = gap
	f.mu.Unlock()
	if first {
		f.gaps.Add(1)
		f.log.Warn("replica cannot catch up: changes are missing from the state stream; re-seeding from a caught-up instance",
			"err", gap, "want", gap.Want, "got", gap.Got, "seq", gap.Seq)
		select {
		case f.gapped <- struct{}{}:
		default:
		}
	}
	return gap
}

// applyOne applies one change at seq and handles the result; a gap is
// returned as it is.
func (f *Follower) applyOne(ctx context.Context, seq uint64, c contracts.StateChange) error {
	res, err := f.o.Store.ApplyState(ctx, seq, f.o.Instance, c, f.o.Now())
	var gap *records.GapError
	if errors.As(err, &gap) {
		return gap
	}
	return f.applied(ctx, seq, c, res, err)
}

// applied handles what ApplyState did with the change at seq.
func (f *Follower) applied(ctx context.Context, seq uint64, c contracts.StateChange, res records.Apply, err error) error {
	if err != nil && ctx.Err() != nil {
		return nil // stopped or restarted mid-change: nothing to report
	}
	f.mu.Lock()
	f.applyErr = err
	if err == nil {
		f.gap = nil
	}
	if err == nil && res == records.Applied && c.N > 0 {
		// The numbering goes on in turn: nothing refused was a change.
		f.refused = nil
	}
	f.mu.Unlock()
	if err != nil {
		return err
	}
	//mutate:fenced-own-change-diverges ./cluster ^TestResumedWriterReseedsItself$
	if res == records.ApplyFencedOwn {
		if err := f.fencedOwn(ctx, seq, c); err != nil {
			f.unhandled = &fencedChange{seq: seq, c: c}
			return fmt.Errorf("own change fenced at seq %d: %w", seq, err)
		}
	} else if res == records.ApplyDuplicate {
		f.duplicates.Add(1)
		f.log.Info("state change skipped: its number was applied before (its writer published it again)", "seq", seq, "n", c.N,
			"epoch", c.Epoch, "origin", c.Origin)
	} else if res == records.ApplyFenced {
		f.log.Warn("state change fenced: written by a deposed writer", "seq", seq, "origin", c.Origin, "epoch", c.Epoch,
			"table", c.Table, "op", c.Op)
	}
	return nil
}

// fencedOwn handles a change this instance wrote that the stream fenced:
// it wrote as a deposed writer (frozen, then resumed), so its database
// holds a change no other replica has. ApplyState recorded that as a
// divergence. Then, as for a restarted writer (Member.fence):
//   - its unsent outbox events are dropped (remediation outcomes
//     excepted) and named: each would be fenced in turn;
//   - the divergence stops the writer and the API and starts a re-seed
//     (Member.Start waits on diverging).
func (f *Follower) fencedOwn(ctx context.Context, seq uint64, c contracts.StateChange) error {
	before, err := f.o.Store.Divergence(ctx)
	if err != nil {
		return err
	}
	if !before.Diverged() {
		return errors.New("own change fenced, but no divergence recorded")
	}
	div, err := f.o.Store.DropDiverged(ctx, before.LastWriter, f.o.Now(), contracts.TypeRemediationOutcome)
	if err != nil {
		return err
	}
	f.divergedRows.Add(uint64(div.Count-before.Count) + 1)
	first := !f.setDiverged(div)
	f.log.Error("DATABASE DIVERGED: a change this instance wrote as a deposed writer was fenced; no other replica has it: not writing, not serving reads, re-seeding from a caught-up instance",
		"seq", seq, "epoch", c.Epoch, "fenced", changeName(c), "last_writer", div.LastWriter, "outbox_dropped", div.Count-before.Count)
	if first {
		select {
		case f.diverging <- struct{}{}:
		default:
		}
	}
	return nil
}

// changeName is a state change's table, operation and row id.
func changeName(c contracts.StateChange) string {
	return fmt.Sprintf("%s %s rowid %d", c.Table, c.Op, c.RowID)
}

// watchStall re-subscribes when the follower stays behind the stream
// with nothing applied for StallAfter: a consumer whose server died can
// otherwise wait out its client's own retries (tens of seconds) or the
// server's return. It looks every StallAfter/4 until ctx ends.
//   - A stall is logged once, at WARN, until a change is applied again.
//   - Caught up, or the stream unreadable, is no stall: there is nothing
//     newer to apply, or nothing to compare with.
//   - After a re-subscribe the new consumer has StallAfter again.
func (f *Follower) watchStall(ctx context.Context) {
	every := max(f.o.StallAfter/4, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	var since time.Time // behind at seq, with nothing applied, since then
	var seq uint64
	stalled := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		lctx, cancel := context.WithTimeout(ctx, f.o.StallAfter)
		lag, err := f.Lag(lctx)
		cancel()
		f.noteStream(err)
		if f.takeNewer() {
			// Created again while this consumer waits past its end: the
			// next one reads it from its start (followStream).
			f.restartConsumer()
			continue
		}
		now := time.Now()
		switch {
		case err != nil:
			continue
		case lag.AppliedSeq != seq || !lag.Behind:
			if stalled && lag.AppliedSeq != seq {
				f.log.Info("state stream resumed", "applied_seq", lag.AppliedSeq, "last_seq", lag.LastSeq)
				stalled = false
			}
			since, seq = now, lag.AppliedSeq
			if !lag.Behind {
				since = time.Time{}
			}
			continue
		case since.IsZero():
			since = now
			continue
		}
		// Nothing can be applied before a consumer is subscribed: the
		// stall is counted from then. Ending one still coming up would
		// start it over, again and again on a slow server.
		sub := f.subscribedAt()
		if sub.IsZero() || now.Sub(since) < f.o.StallAfter || now.Sub(sub) < f.o.StallAfter {
			continue
		}
		if !stalled {
			f.log.Warn("state stream stalled: behind with nothing applied, re-subscribing", "applied_seq", lag.AppliedSeq,
				"last_seq", lag.LastSeq, "idle", now.Sub(since).Round(time.Millisecond), "bound", f.o.StallAfter)
			stalled = true
		}
		since = now
		f.mu.Lock()
		f.resubscribes++
		f.mu.Unlock()
		f.restartConsumer()
	}
}

// restartConsumer ends the running consumer: Run starts the next one
// from the applied sequence (follow).
func (f *Follower) restartConsumer() {
	f.mu.Lock()
	restart := f.restart
	f.mu.Unlock()
	if restart != nil {
		restart()
	}
}

// forgetWaits drops what the consumers kept about the stream's positions
// (changes applied ahead, the number waited for): the database's
// position moved, by a copy or a stream created again. The caller
// holds f.mu.
func (f *Follower) forgetWaits() {
	clear(f.early)
	f.waitN, f.waitSince = 0, time.Time{}
}

// noteStream records what a lookup of the stream said (err from Lag).
// Not found is the stream gone: logged once (ERROR) and counted until
// it is found again. Any other error tells nothing: during a partition
// only JetStream's meta leader can say a stream does not exist.
func (f *Follower) noteStream(err error) {
	gone := errors.Is(err, jetstream.ErrStreamNotFound)
	if err != nil && !gone {
		return
	}
	f.mu.Lock()
	was := f.gone
	f.gone = nil
	if gone {
		f.gone = streamGoneError(f.o.Stream)
		if was == nil {
			f.goneSince = time.Now()
		}
	}
	f.mu.Unlock()
	switch {
	//mutate:stream-gone-counted ./cluster ^TestLostStreamIsCreatedAgain$
	case gone && was == nil:
		f.lost.Add(1)
		f.log.Error("state stream is gone: nothing is replicated, and no instance writes, until the lease holder creates it again (docs/CLUSTER.md)",
			"stream", f.o.Stream)
	case !gone && was != nil:
		f.log.Info("state stream found again", "stream", f.o.Stream)
	}
}

// streamGoneError names a stream not found; it is a
// jetstream.ErrStreamNotFound.
type streamGoneError string

func (e streamGoneError) Error() string {
	return "state stream " + string(e) + " is not found (deleted, or its JetStream store lost)"
}

func (e streamGoneError) Unwrap() error { return jetstream.ErrStreamNotFound }

// StreamGone says why the state stream is not found now (nil: it is,
// or the last lookup could not tell).
func (f *Follower) StreamGone() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gone
}

// StreamGoneFor is how long the state stream has been found gone (0:
// it is not).
func (f *Follower) StreamGoneFor() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone == nil {
		return 0
	}
	return time.Since(f.goneSince)
}

// StreamLosses counts the times the state stream was found gone.
func (f *Follower) StreamLosses() uint64 { return f.lost.Load() }

func (f *Follower) subscribed(at time.Time) {
	f.mu.Lock()
	f.consumerSince = at
	f.mu.Unlock()
}

func (f *Follower) subscribedAt() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.consumerSince
}

// Refused says why this database may lack a change: one was refused
// (not authenticated, or a format this build cannot read) and no
// numbered change has applied in turn since (nil: none).
func (f *Follower) Refused() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused
}

// Gaps counts the gaps found since the start (each starts a re-seed).
func (f *Follower) Gaps() uint64 { return f.gaps.Load() }

// Duplicates counts the changes skipped since the start because their
// number was applied before (a change its writer published again).
func (f *Follower) Duplicates() uint64 { return f.duplicates.Load() }

// Resubscribes counts the consumers ended for a stall since the start.
func (f *Follower) Resubscribes() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resubscribes
}

// Decode reads a state-change event (a CloudEvents envelope whose data is
// a contracts.StateChange), naming the field that is wrong. A change
// whose row holds a value no column can (an object, an array, a
// boolean) is a *RowError carrying the change.
func Decode(raw []byte) (contracts.StateChange, error) {
	ev, err := contracts.DecodeEvent(raw)
	if err != nil {
		return contracts.StateChange{}, err
	}
	if ev.Type != contracts.TypeStateChange {
		return contracts.StateChange{}, fmt.Errorf("type: %q is not %s", ev.Type, contracts.TypeStateChange)
	}
	c, err := contracts.DecodeStateChange(ev.Data)
	if err != nil || c.Op != contracts.OpUpsert {
		return c, err
	}
	for _, k := range slices.Sorted(maps.Keys(c.Row)) {
		if !columnValue(c.Row[k]) {
			return contracts.StateChange{}, &RowError{Change: c, Column: k}
		}
	}
	return c, nil
}

// RowError: a writer published a row value no column holds (a bug of
// the writer's, never an attacker's: the change verified). Change is
// the change as decoded.
type RowError struct {
	Change contracts.StateChange
	Column string
}

func (e *RowError) Error() string {
	v := string(e.Change.Row[e.Column])
	if len(v) > 64 {
		v = v[:64] + "..."
	}
	return fmt.Sprintf("state change: row.%s: %s is not a column value (a string, a number or null) in %s", e.Column, v, changeName(e.Change))
}

// columnValue reports whether raw is a JSON string, number or null.
func columnValue(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return false
	}
	switch t[0] {
	case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// Lag is how far the local database is behind the state stream.
type Lag struct {
	AppliedSeq uint64     `json:"applied_seq"`
	LastSeq    uint64     `json:"last_seq"`
	Behind     bool       `json:"behind"`
	AppliedAt  *time.Time `json:"applied_at,omitempty"`
	Dropped    uint64     `json:"dropped"`
	// Epoch is the highest writer epoch applied; Fenced counts changes
	// ignored as a deposed writer's.
	Epoch  uint64 `json:"epoch"`
	Fenced uint64 `json:"fenced"`
	// Gap, when set, says which changes are missing from the stream: the
	// database cannot catch up and must be re-seeded.
	Gap string `json:"gap,omitempty"`
	// Diverged, when set, says the database holds rows the stream never
	// got (Follower.Diverged): it is re-seeded from a caught-up instance.
	Diverged string `json:"diverged,omitempty"`
	// ApplyError, when set, is why the last change could not be applied
	// (a full disk, a read-only file): the follower retries it.
	ApplyError string `json:"apply_error,omitempty"`
	// WaitingFor, when set, is the change number missing from the stream
	// while later ones arrived: they are held until it does (HoldFor).
	WaitingFor uint64 `json:"waiting_for,omitempty"`
	// StreamError, when set, is why the stream's last sequence could not
	// be read: LastSeq is unknown (0) and Behind is assumed.
	StreamError string `json:"stream_error,omitempty"`
	// Refused, when set, is the last change refused since a numbered one
	// applied in turn (Follower.Refused).
	Refused string `json:"refused,omitempty"`
}

// Gap returns the changes missing from the stream that stop this replica
// (nil: none seen).
func (f *Follower) Gap() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gap == nil {
		return nil
	}
	return f.gap
}

// LastSeq is the stream sequence of the last state change (0: none yet).
func (f *Follower) LastSeq(ctx context.Context) (uint64, error) {
	s, err := f.o.JetStream.Stream(ctx, f.o.Stream)
	if err != nil {
		return 0, fmt.Errorf("state stream: %w", err)
	}
	f.noteCreated(s.CachedInfo().Created)
	m, err := s.GetLastMsgForSubject(ctx, f.FullSubject())
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("last state change: %w", err)
	}
	return m.Sequence, nil
}

// Lag compares the applied sequence with the stream's last. When the
// stream cannot be read (a partition, a slow server) it returns the
// error with what this database knows by itself: its position, a gap,
// a divergence, an apply error (StreamError set, Behind assumed). The
// partition test read a standby as caught up because a failed lookup
// reported every field as zero.
func (f *Follower) Lag(ctx context.Context) (Lag, error) {
	st, err := f.o.Store.ReplicaStatus(ctx)
	if err != nil {
		return Lag{}, err
	}
	last, streamErr := f.LastSeq(ctx)
	f.mu.Lock()
	dropped := f.dropped
	gap, applyErr := "", ""
	if f.gap != nil {
		gap = f.gap.Error()
	}
	if f.applyErr != nil {
		applyErr = f.applyErr.Error()
	}
	waiting := f.waitN
	refused := ""
	if f.refused != nil {
		refused = f.refused.Error()
	}
	f.mu.Unlock()
	diverged := ""
	if err := f.Diverged(); err != nil {
		diverged = err.Error()
	}
	l := Lag{AppliedSeq: st.AppliedSeq, LastSeq: last, Behind: st.AppliedSeq < last, AppliedAt: st.AppliedAt, Dropped: dropped,
		Epoch: st.AppliedEpoch, Fenced: st.Fenced, Gap: gap, Diverged: diverged, ApplyError: applyErr, WaitingFor: waiting, Refused: refused}
	//mutate:lag-unknown-is-behind ./cluster ^TestLagKeepsLocalFactsWhileTheStreamIsUnreadable$
	if streamErr != nil {
		l.LastSeq, l.Behind, l.StreamError = 0, true, streamErr.Error()
	}
	return l, streamErr
}

// CatchUp returns once the database applied the stream's last state
// change as of the call (Run must be running), or with ctx's error.
func (f *Follower) CatchUp(ctx context.Context) error {
	target, err := f.LastSeq(ctx)
	if err != nil {
		return err
	}
	return f.await(ctx, func(st records.ReplicaStatus) error {
		if st.AppliedSeq >= target {
			return nil
		}
		return fmt.Errorf("catch up to state seq %d (applied %d)", target, st.AppliedSeq)
	})
}
