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

	"github.com/patrold/patrold/bus/msgauth"
	"github.com/patrold/patrold/contracts"
)

// Lease defaults.
const (
	DefaultLeaseKey    = "patrol"
	leaseReleaseWait   = 2 * time.Second
	leaseMinFollowPoll = 100 * time.Millisecond
)

// KeyValueStores is the part of jetstream.JetStream the lease uses.
type KeyValueStores interface {
	CreateOrUpdateKeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error)
}

var _ KeyValueStores = (jetstream.JetStream)(nil)

// LeaseOptions configure a Lease.
type LeaseOptions struct {
	Bucket string // default contracts.DefaultLeaseBucket
	Key    string // default DefaultLeaseKey
	// Holder identifies this instance and must be unique among instances
	// (e.g. hostname and pid, or an instance id).
	Holder string
	// TTL is how long a lease outlives its last renewal; at least 1 s.
	TTL time.Duration
	// Replicas of the bucket's stream (0: 1); on a cluster as many as the
	// patrol stream's, so the lease survives the loss of a server.
	Replicas int
	Now      func() time.Time
	Logger   *slog.Logger
	// OnChange, when set, is called with the new state each time this
	// instance becomes or stops being the leader (acquired, lost, run out,
	// released by Close), one call at a time.
	OnChange func(leader bool)
}

// Lease is a leader lease on a JetStream KV key whose bucket has a TTL. The
// holder renews every TTL/3 with a revision-checked update; others try to
// create the key every TTL/5 and succeed once it expired or was released. A
// holder counts itself leader only until TTL after the start of its last
// successful write. That is never later than the server expires the key, so
// two instances are never leader at once (clocks running at the same rate
// assumed).
type Lease struct {
	js  KeyValueStores
	o   LeaseOptions
	log *slog.Logger

	opMu sync.Mutex // serialises KV writes (renew, acquire, release)
	kv   jetstream.KeyValue

	mu         sync.Mutex // guards the fields below; never held across I/O
	leader     bool
	held       bool // the key was last written by us (released by Close)
	rev        uint64
	term       uint64 // the revision this tenure began with
	validUntil time.Time
	closed     bool
	done       chan struct{}
	// eligible, when set, says whether this instance may hold the lease
	// now (StepDown); while it says no, a held lease is released and
	// none is taken.
	eligible func() bool
	// other is the holder last seen on the key (another instance), when.
	other     string
	otherSeen time.Time
	// quietUntil: after the bucket was lost, no lease is taken until a
	// TTL passed: a holder of the lost key may count itself leader that
	// long (monotonic clock).
	quietUntil time.Time
	// skew: this instance's clock was last found off the NATS server's
	// by more than ClockSkewBound (nil: in step, or not measured yet).
	skew error
}

// ClockSkewBound is how far this instance's clock may be from the NATS
// server's. Messages are signed with the sender's time and refused
// outside msgauth.DefaultWindow: a leader past half of it would hold the
// lease while its own changes are refused, and never write.
const ClockSkewBound = msgauth.DefaultWindow / 2

// errClockSkew ends a write that succeeded on a skewed clock.
var errClockSkew = errors.New("clock skew")

// NewLease validates the options.
func NewLease(js KeyValueStores, o LeaseOptions) (*Lease, error) {
	if js == nil {
		return nil, errors.New("lease: JetStream is required")
	}
	setStr(&o.Bucket, contracts.DefaultLeaseBucket)
	setStr(&o.Key, DefaultLeaseKey)
	setNum(&o.TTL, DefaultLeaseTTL)
	switch {
	case !contracts.ValidToken(o.Bucket):
		return nil, fmt.Errorf("nats.lease.bucket: %q must be letters, digits, - and _", o.Bucket)
	case !contracts.ValidToken(o.Key):
		return nil, fmt.Errorf("lease: Key %q must be letters, digits, - and _", o.Key)
	case o.Holder == "":
		return nil, errors.New("lease: Holder is required")
	case o.TTL < minLeaseTTL:
		return nil, fmt.Errorf("nats.lease.ttl: must be at least %s, got %s", minLeaseTTL, o.TTL)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	log := o.Logger.With("component", "lease", "bucket", o.Bucket, "holder", o.Holder)
	return &Lease{js: js, o: o, log: log, done: make(chan struct{})}, nil
}

// IsLeader reports whether this instance holds a lease that has not run out.
func (l *Lease) IsLeader() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leader && l.o.Now().Before(l.validUntil)
}

// Term is the lease revision this instance's current tenure began with (0
// when it is not the leader). The key's revisions only grow, so a later
// tenure, of any holder, has a higher term: the writer's fencing epoch.
func (l *Lease) Term() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.leader || !l.o.Now().Before(l.validUntil) {
		return 0
	}
	return l.term
}

// Holder is the instance that holds the lease as this one last saw it
// (itself while leader) and when; "" when none was seen within a TTL:
// no instance holds it, or this one cannot tell (NATS unreachable).
// The time is read on the monotonic clock.
func (l *Lease) Holder() (string, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.leader && l.o.Now().Before(l.validUntil) {
		return l.o.Holder, time.Now()
	}
	if l.other == "" || time.Since(l.otherSeen) > l.o.TTL {
		return "", l.otherSeen
	}
	return l.other, l.otherSeen
}

// StepDown makes the lease ask eligible before every acquisition and
// renewal: while it answers false, a held lease is released (a
// revision-checked delete, so another instance takes over at once) and
// none is taken. Unlike Close, the lease is contended for again once it
// answers true (a replica re-seeded after a gap or a divergence).
func (l *Lease) StepDown(eligible func() bool) {
	l.mu.Lock()
	l.eligible = eligible
	l.mu.Unlock()
}

// Run creates the bucket, then acquires and renews the lease until ctx ends
// or Close is called. It does not release the key; Close does. A bucket
// creation that fails is retried, so a JetStream that is not ready yet
// delays the lease instead of ending it:
//   - at once after no answer within streamAttemptTimeout (a clustered
//     JetStream may leave concurrent creates of one bucket unanswered);
//   - TTL/3 later after an error.
func (l *Lease) Run(ctx context.Context) error {
	for {
		if !l.ensureBucket(ctx) {
			return nil
		}
		wait := l.step(ctx)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-l.done:
			timer.Stop()
			return nil
		case <-timer.C:
		}
	}
}

// ensureBucket creates (or updates) the bucket unless the lease has it,
// retrying until it is there; false: ctx ended or Close was called.
func (l *Lease) ensureBucket(ctx context.Context) bool {
	l.opMu.Lock()
	have := l.kv != nil
	l.opMu.Unlock()
	if have {
		return true
	}
	var kv jetstream.KeyValue
	for {
		actx, cancel := context.WithTimeout(ctx, streamAttemptTimeout)
		var err error
		kv, err = l.js.CreateOrUpdateKeyValue(actx, jetstream.KeyValueConfig{
			Bucket:      l.o.Bucket,
			Description: "patrold leader lease",
			TTL:         l.o.TTL,
			History:     1,
			Storage:     jetstream.FileStorage,
			Replicas:    max(l.o.Replicas, 1),
		})
		cancel()
		if err == nil {
			break
		}
		l.log.Warn("leader lease bucket not ready; retrying", "err", fmt.Errorf("nats.lease.bucket: create or update %s: %w", l.o.Bucket, err))
		wait := l.o.TTL / 3
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
			wait = 0
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return false
		case <-l.done:
			timer.Stop()
			return false
		case <-timer.C:
		}
	}
	l.opMu.Lock()
	l.kv = kv
	l.opMu.Unlock()
	return true
}

// bucketGone reports whether a failed write (err) failed because the
// lease bucket no longer exists (deleted, or a JetStream whose store was
// lost): the bucket is looked up, and only "not found" says so, never a
// timeout (a partition).
func (l *Lease) bucketGone(ctx context.Context, err error) bool {
	if err == nil || errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return false
	}
	kvs, ok := l.js.(interface {
		KeyValue(ctx context.Context, bucket string) (jetstream.KeyValue, error)
	})
	if !ok {
		return false
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(l.o.TTL/5, leaseMinFollowPoll))
	defer cancel()
	_, lerr := kvs.KeyValue(lctx, l.o.Bucket)
	return errors.Is(lerr, jetstream.ErrBucketNotFound) || errors.Is(lerr, jetstream.ErrStreamNotFound)
}

// step renews or tries to acquire once and returns the wait until the next.
func (l *Lease) step(ctx context.Context) time.Duration {
	l.opMu.Lock()
	defer l.opMu.Unlock()
	l.mu.Lock()
	leader, rev, closed, eligible := l.leader, l.rev, l.closed, l.eligible
	ranOut := leader && !l.o.Now().Before(l.validUntil)
	if ranOut {
		leader, l.leader = false, false
		l.log.Warn("leader lease ran out before it could be renewed")
	}
	l.mu.Unlock()
	if ranOut {
		l.changed(false)
	}
	if closed {
		return l.o.TTL
	}
	opCtx, cancel := context.WithTimeout(ctx, l.o.TTL/3)
	defer cancel()
	//mutate:gap-releases-lease ./daemon ^TestGappedInstanceReleasesTheLease
	if eligible != nil && !eligible() {
		l.stepDown(opCtx)
		l.observe(opCtx)
		return max(l.o.TTL/5, leaseMinFollowPoll)
	}
	start := l.o.Now()
	if leader {
		newRev, err := l.kv.Update(opCtx, l.o.Key, []byte(l.o.Holder), rev)
		err = l.checkClock(opCtx, start, newRev, err)
		gone := l.bucketGone(opCtx, err)
		l.record(start, newRev, err, errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyNotFound) ||
			errors.Is(err, errClockSkew) || gone)
		l.lostBucket(gone, err)
		return l.o.TTL / 3
	}
	l.mu.Lock()
	quiet := time.Now().Before(l.quietUntil)
	l.mu.Unlock()
	if quiet {
		return max(l.o.TTL/5, leaseMinFollowPoll)
	}
	newRev, err := l.kv.Create(opCtx, l.o.Key, []byte(l.o.Holder))
	if errors.Is(err, jetstream.ErrKeyExists) {
		newRev, err = l.reclaim(opCtx)
	}
	err = l.checkClock(opCtx, start, newRev, err)
	l.record(start, newRev, err, true)
	l.lostBucket(l.bucketGone(opCtx, err), err)
	if err == nil {
		return l.o.TTL / 3
	}
	return max(l.o.TTL/5, leaseMinFollowPoll)
}

// checkClock compares this instance's clock with the NATS server's
// after a write that succeeded (err nil) at revision rev, begun at start:
// the server stamps the key when it stores it. Past ClockSkewBound
// either way, the key is released at once and the write counts as
// failed: a skewed instance never leads. Callers hold opMu.
func (l *Lease) checkClock(ctx context.Context, start time.Time, rev uint64, err error) error {
	if err != nil {
		return err
	}
	end := l.o.Now()
	e, gerr := l.kv.Get(ctx, l.o.Key)
	if gerr != nil || e.Revision() != rev {
		return nil // not measured: the write stands
	}
	stored := e.Created()
	var off time.Duration
	switch {
	case stored.Before(start):
		off = stored.Sub(start)
	case stored.After(end):
		off = stored.Sub(end)
	}
	l.mu.Lock()
	was := l.skew
	//mutate:lease-refuses-skewed-clock ./bus ^TestSkewedClockNeverLeads$
	if off > ClockSkewBound || -off > ClockSkewBound {
		way, by := "ahead of", -off
		if off > 0 {
			way, by = "behind", off
		}
		l.skew = fmt.Errorf("this instance's clock is %s %s the NATS server's (at most %s either way): fix its time (NTP)", by.Round(time.Second), way, ClockSkewBound)
	} else {
		l.skew = nil
	}
	skew := l.skew
	l.mu.Unlock()
	switch {
	case skew != nil && was == nil:
		l.log.Error("clock skew: not leading", "err", skew)
	case skew == nil && was != nil:
		l.log.Info("clock back in step with the NATS server's")
	}
	if skew == nil {
		return nil
	}
	if derr := l.kv.Delete(ctx, l.o.Key, jetstream.LastRevision(rev)); derr != nil {
		l.log.Warn("release the leader lease", "err", derr)
	}
	l.mu.Lock()
	l.held = false
	l.mu.Unlock()
	return fmt.Errorf("%w: %w", errClockSkew, skew)
}

// ClockSkew says why this instance's clock is unfit to lead (nil: it
// was in step with the NATS server's at the last write).
func (l *Lease) ClockSkew() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.skew
}

// observe reads who holds the key (Holder) without contending for it;
// callers hold opMu.
func (l *Lease) observe(ctx context.Context) {
	if l.kv == nil {
		return
	}
	e, err := l.kv.Get(ctx, l.o.Key)
	if err != nil || string(e.Value()) == l.o.Holder {
		return
	}
	l.mu.Lock()
	l.other, l.otherSeen = string(e.Value()), time.Now()
	l.mu.Unlock()
}

// lostBucket drops the bucket after err said it is gone, so Run creates
// it again before the next write; callers hold opMu.
func (l *Lease) lostBucket(gone bool, err error) {
	//mutate:lease-bucket-recreated ./bus ^TestLeaseBucketRecreated
	if gone {
		l.log.Error("leader lease bucket is gone: creating it again; no lease is taken for a TTL", "err", err)
		l.kv = nil
		l.mu.Lock()
		l.quietUntil = time.Now().Add(l.o.TTL)
		l.mu.Unlock()
	}
}

// stepDown ends leadership now and releases a held key; callers hold
// opMu.
func (l *Lease) stepDown(ctx context.Context) {
	l.mu.Lock()
	was, held, rev := l.leader, l.held, l.rev
	l.leader, l.held = false, false
	l.mu.Unlock()
	if was {
		l.log.Warn("leader lease released: this instance may not write now")
		l.changed(false)
	}
	if held && l.kv != nil {
		if err := l.kv.Delete(ctx, l.o.Key, jetstream.LastRevision(rev)); err != nil {
			l.log.Warn("release the leader lease", "err", err)
		}
	}
}

// reclaim takes over a key that still names this holder (a restart inside
// the TTL); any other holder's key is left alone.
func (l *Lease) reclaim(ctx context.Context) (uint64, error) {
	e, err := l.kv.Get(ctx, l.o.Key)
	if err != nil {
		return 0, err
	}
	if string(e.Value()) != l.o.Holder {
		l.mu.Lock()
		l.other, l.otherSeen = string(e.Value()), time.Now()
		l.mu.Unlock()
		return 0, jetstream.ErrKeyExists
	}
	return l.kv.Update(ctx, l.o.Key, []byte(l.o.Holder), e.Revision())
}

// record applies the result of a write that started at start. lose says
// whether a failure ends leadership now (another holder, or a deleted key)
// rather than when the current lease runs out.
func (l *Lease) record(start time.Time, rev uint64, err error, lose bool) {
	l.mu.Lock()
	was := l.leader
	l.recordLocked(start, rev, err, lose)
	now := l.leader
	l.mu.Unlock()
	if was != now {
		l.changed(now)
	}
}

// changed announces a change of leadership (callers hold opMu, so calls
// never overlap).
func (l *Lease) changed(leader bool) {
	if l.o.OnChange != nil {
		l.o.OnChange(leader)
	}
}

func (l *Lease) recordLocked(start time.Time, rev uint64, err error, lose bool) {
	if err == nil {
		l.held, l.rev = true, rev
	} else if lose {
		l.held = false
	}
	if l.closed {
		return
	}
	if err == nil {
		if !l.leader {
			l.term = rev
			l.log.Info("leader lease acquired", "ttl", l.o.TTL, "term", rev)
		}
		l.leader, l.validUntil = true, start.Add(l.o.TTL)
		return
	}
	if l.leader && lose {
		l.leader = false
		l.log.Warn("leader lease lost", "err", err)
	} else if l.leader {
		l.log.Warn("leader lease renewal failed; still leader until the lease runs out", "err", err, "until", l.validUntil)
	} else if !errors.Is(err, jetstream.ErrKeyExists) {
		l.log.Debug("leader lease not acquired", "err", err)
	}
}

// ownKey returns the revision of a key that names this holder, 0 when
// there is none or it cannot be read. A write whose answer was lost (the
// stop cancelled it) may have stored such a key without this lease
// knowing its revision.
func (l *Lease) ownKey(ctx context.Context) uint64 {
	e, err := l.kv.Get(ctx, l.o.Key)
	if err != nil || string(e.Value()) != l.o.Holder {
		return 0
	}
	return e.Revision()
}

// Close stops Run and releases a held lease (a revision-checked delete) so
// another instance can take over at once. It is idempotent.
func (l *Lease) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.done)
	was := l.leader
	l.leader = false
	l.mu.Unlock()
	l.opMu.Lock() // wait for a write in flight
	defer l.opMu.Unlock()
	if was {
		l.changed(false)
	}
	l.mu.Lock()
	held, rev := l.held, l.rev
	l.held = false
	l.mu.Unlock()
	if l.kv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaseReleaseWait)
	defer cancel()
	//mutate:lease-close-releases-unanswered ./bus ^TestLeaseCloseReleasesAKeyWhoseAnswerWasLost$
	if !held {
		rev = l.ownKey(ctx)
	}
	if rev == 0 {
		return nil
	}
	if err := l.kv.Delete(ctx, l.o.Key, jetstream.LastRevision(rev)); err != nil {
		return fmt.Errorf("release leader lease: %w", err)
	}
	l.log.Info("leader lease released")
	return nil
}
