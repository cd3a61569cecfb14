package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/contracts"
)

// Cluster-mode replication defaults.
const (
	// LeaderPoll is how often a Member looks at the lease.
	LeaderPoll = 100 * time.Millisecond
	// CatchUpTimeout bounds one catch-up; it is retried while leading.
	CatchUpTimeout = 5 * time.Second
	// NoWriterGrace: no writer known for that long is logged and counted
	// (readiness says so at once).
	NoWriterGrace = 2 * time.Second
	// StreamRecreateAfter: the lease holder creates a state stream found
	// gone for that long again (every instance has said so by then), and
	// tries again as often while it stays gone.
	StreamRecreateAfter = time.Second
	// streamCreateTimeout bounds one creation of a lost stream (a
	// clustered JetStream may leave a create unanswered: retried).
	streamCreateTimeout = 10 * time.Second
)

// Lease is the leader lease a Member follows (bus.Lease).
type Lease interface {
	IsLeader() bool // holds the lease
	Term() uint64   // the lease term (0: not leading)
	Close() error   // releases the lease for good
}

// Bus is the NATS a Member replicates over (bus.Bus).
type Bus interface {
	JetStream() jetstream.JetStream
	Conn() *nats.Conn
	StreamName() string
	Prefix() string
	// Guard signs and verifies with the deployment key (nil: neither).
	Guard() *bus.Guard
}

// Options configure a Member.
type Options struct {
	Bus        Bus
	Lease      Lease
	Leadership *Leadership // told the writer state (IsWriter)
	Store      Store
	Instance   string // this instance's stable name
	DataDir    string // seed copies are written here
	Replicas   int    // the seed bucket's replicas (nats.stream.replicas)
	Kick       func() // the relay: publish what is pending now
	Logger     *slog.Logger
	Now        func() time.Time
	Registerer prometheus.Registerer // nil: no metrics
	// StallAfter: behind the stream with nothing applied for that long,
	// the follower re-subscribes (0: DefaultStallAfter; the daemon passes
	// StallBound of the lease TTL).
	StallAfter time.Duration
	// HoldFor bounds the wait for a change missing from the stream while
	// later ones arrived (0: DefaultHoldFor; the daemon passes HoldBound
	// of the lease TTL).
	HoldFor time.Duration
	// Republish makes the relay publish what is pending now, even while
	// it backs off (nil: Kick).
	Republish func()
	// Resend makes the relay publish again, before anything newer, the
	// change this writer numbered n that the stream lost (bus.Relay.Resend;
	// nil: none). The store hands out nothing unless it is the writer.
	Resend func(n uint64)
	// AnswerTimeout is http.stream_ack_timeout: a standby waits that
	// long, and ForwardMargin, for a forwarded answer (0: its default).
	AnswerTimeout time.Duration
}

// holderSeer is a lease that tells who holds it (bus.Lease.Holder).
type holderSeer interface {
	Holder() (string, time.Time)
}

// clockSkewer is a lease that measures this instance's clock against the
// NATS server's (bus.Lease.ClockSkew).
type clockSkewer interface{ ClockSkew() error }

// stepDowner is a lease that releases itself while eligible says no
// (bus.Lease.StepDown).
type stepDowner interface{ StepDown(eligible func() bool) }

// Member runs a clustered instance's side of the shared state. The
// follower applies the leader's state changes always, so a standby stays
// warm and a leader's own sequence advances. On every change of
// leadership, Member switches between the two roles. An instance that
// wins the lease is not the writer until its database has applied the
// stream's last state change. Then it captures its own changes and runs
// what only the writer runs (WhileWriter). One that loses the lease stops
// both at once.
type Member struct {
	o        Options
	log      *slog.Logger
	f        *Follower
	leading  func() bool   // holds the lease
	term     func() uint64 // the lease term (0: not leading)
	yield    func() error  // releases the lease for good
	instance string
	// steps: the lease releases itself while mayLead says no, so a
	// diverged or gapped instance never yields it for good.
	steps bool

	writer atomic.Bool // leading, caught up, capturing
	// creating: a lost state stream is being created again.
	creating atomic.Bool
	// roles serialises what changes the database under the writer role:
	//   - promote and demote (the watch);
	//   - installing a re-seed copy, which switches capture off: it
	//     happens only after a demote, never while a promote runs.
	roles sync.Mutex
	// reseeds counts the re-seeds that ended a divergence since the start.
	reseeds atomic.Uint64
	// noWriters counts the times this instance found no writer.
	noWriters atomic.Uint64

	runMu  sync.Mutex
	cancel context.CancelFunc // Start's goroutines
	run    sync.WaitGroup

	mu          sync.Mutex
	stopWriting context.CancelFunc // the leader-only consumers
	writeCtx    context.Context    // theirs, while writer
	leaderOnly  []func(context.Context)
	// epochTerm and epoch: the lease term capture was last switched on in,
	// and the epoch it used, so a retry in the same tenure keeps it.
	epochTerm, epoch uint64
	wg               sync.WaitGroup
	// writes is held for reading by every mutation this instance serves
	// as the writer; demote takes it before capture goes off, so no such
	// request commits a row the stream never gets.
	writes sync.RWMutex
}

// WhileWriter runs fn (until its context ends) every time this instance
// becomes the writer, and at once when it is one now: the consumers of
// outcomes and remediation requests, the session service, forwarding.
func (r *Member) WhileWriter(fn func(context.Context)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leaderOnly = append(r.leaderOnly, fn)
	if r.writeCtx != nil {
		r.goWrite(r.writeCtx, fn)
	}
}

// goWrite runs fn on ctx; callers hold mu.
func (r *Member) goWrite(ctx context.Context, fn func(context.Context)) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		fn(ctx)
	}()
}

// New validates o, builds the follower, registers the metrics and hands
// the writer state to o.Leadership; nothing runs until Start.
func New(o Options) (*Member, error) {
	switch {
	case o.Bus == nil || o.Lease == nil || o.Leadership == nil:
		return nil, errors.New("cluster: Bus, Lease and Leadership are required")
	case o.Kick == nil:
		return nil, errors.New("cluster: Kick is required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Republish == nil {
		o.Republish = o.Kick
	}
	f, err := NewFollower(FollowerOptions{JetStream: o.Bus.JetStream(), Stream: o.Bus.StreamName(), Prefix: o.Bus.Prefix(),
		Store: o.Store, Instance: o.Instance, Logger: o.Logger, Now: o.Now, Guard: o.Bus.Guard(), StallAfter: o.StallAfter,
		HoldFor: o.HoldFor, Republish: func(n uint64) {
			if o.Resend != nil {
				o.Resend(n) // wakes the relay too
				return
			}
			o.Republish()
		}})
	if err != nil {
		return nil, err
	}
	r := &Member{o: o, log: o.Logger, f: f, leading: o.Lease.IsLeader, term: o.Lease.Term, yield: o.Lease.Close, instance: o.Instance}
	if o.Registerer != nil {
		if err := o.Registerer.Register(replicaCollector{r}); err != nil {
			return nil, fmt.Errorf("replica metrics: %w", err)
		}
	}
	o.Leadership.attachWriter(r.isWriter)
	if sd, ok := o.Lease.(stepDowner); ok {
		// The lease is held only while this database may write, and
		// contended for again after a re-seed.
		sd.StepDown(r.mayLead)
		r.steps = true
	}
	return r, nil
}

// Start runs the follower, the seed service and the leadership watch
// until Stop. A clustered instance starts as a standby: its store
// captures nothing. Call it before the relay starts: it drops a deposed
// writer's unsent changes first (fence).
func (r *Member) Start(ctx context.Context) error {
	if err := r.o.Store.DisableCapture(ctx); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.runMu.Lock()
	r.cancel = cancel
	r.runMu.Unlock()
	// A divergence a previous start recorded holds until re-seeded.
	div, err := r.o.Store.Divergence(ctx)
	if err != nil {
		cancel()
		return err
	}
	r.f.setDiverged(div)
	r.goRun(func() { _ = r.f.Run(runCtx) })
	r.fence(runCtx)
	if err := r.f.Diverged(); err != nil {
		r.log.Error("DATABASE DIVERGED from the state stream: not writing, not serving reads, re-seeding from a caught-up instance", "err", err)
	}
	// Any caught-up instance hands a copy of its database to one that
	// cannot catch up (`patrold db seed`) or diverged; a diverged one
	// re-seeds itself first.
	r.goRun(func() {
		r.reseedLoop(runCtx)
		// A divergence found while running (its own change fenced: it
		// wrote as a deposed writer) is re-seeded the same way. Meanwhile
		// this instance leaves the seed queue group: the group hands each
		// request to one member, and a diverged one would take its own
		// request (and others') only to refuse it.
		for {
			serveCtx, stopServing := context.WithCancel(runCtx)
			served := make(chan struct{})
			go func() {
				defer close(served)
				_ = r.f.ServeSeeds(serveCtx, r.o.Bus.Conn(), r.o.DataDir, r.o.Replicas, r.seedReady)
			}()
			select {
			case <-runCtx.Done():
				stopServing()
				<-served
				return
			case <-r.f.diverging:
				stopServing()
				<-served
				r.reseedLoop(runCtx)
			case <-r.f.gapped:
				// Changes missing from the stream for good: the same
				// re-seed, from the writer's (any caught-up instance's)
				// signed copy.
				stopServing()
				<-served
				r.reseedLoop(runCtx)
			}
		}
	})
	r.goRun(func() { r.watch(runCtx) })
	return nil
}

// Stop ends what Start runs and waits for it: a writer steps down first
// (its writer-only work stops, capture goes off). It is idempotent.
func (r *Member) Stop(context.Context) error {
	r.runMu.Lock()
	cancel := r.cancel
	r.runMu.Unlock()
	if cancel != nil {
		cancel()
	}
	r.run.Wait()
	return nil
}

func (r *Member) goRun(fn func()) {
	r.run.Add(1)
	go func() {
		defer r.run.Done()
		fn()
	}()
}

// fence runs before the relay starts. It looks at events left unsent in
// the outbox with state changes among them (a writer killed between its
// commit and the publish). Once caught up:
//   - when the stream's last change came from another instance, they are
//     dropped, remediation outcomes excepted: a newer writer wrote since,
//     and replaying older row images over its rows would undo them (and
//     their finding events repeat its own). The rows they changed stay in
//     this database, which therefore diverged: that is recorded with the
//     rows dropped (Store.DropDiverged), and Start re-seeds it;
//   - when this instance wrote last, they are still the newest and are
//     published;
//   - unable to tell (no stream), they are kept.
func (r *Member) fence(ctx context.Context) {
	n, err := r.o.Store.UnsentState(ctx)
	if err != nil || n == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, CatchUpTimeout)
	err = r.f.CatchUp(cctx)
	cancel()
	if err != nil {
		r.log.Warn("unsent state changes kept: cannot read the state stream to tell whether they are stale", "rows", n, "err", err)
		return
	}
	st, err := r.o.Store.ReplicaStatus(ctx)
	if err != nil || st.AppliedOrigin == "" || st.AppliedOrigin == r.instance {
		return
	}
	// Remediation outcomes stay: they answer requests the writer of
	// the stream knows.
	before, err := r.o.Store.Divergence(ctx)
	if err != nil {
		r.log.Error("drop stale outbox events", "err", err)
		return
	}
	div, err := r.o.Store.DropDiverged(ctx, st.AppliedOrigin, r.o.Now(), contracts.TypeRemediationOutcome)
	if err != nil {
		r.log.Error("drop stale outbox events", "err", err)
		return
	}
	dropped := div.Count - before.Count
	r.f.divergedRows.Add(uint64(dropped))
	r.f.setDiverged(div)
	r.log.Error("unsent state changes dropped: another instance wrote since this one stopped; this database still holds them and is re-seeded",
		"rows", dropped, "state_changes", n, "last_writer", st.AppliedOrigin, "dropped", div.Rows)
}

// NoWriter says why this instance knows of no writer now (nil: it is
// the writer, or another instance held the lease within a TTL). A
// standby cut off from the others (a partition) reports it too.
func (r *Member) NoWriter() error {
	if r == nil || r.isWriter() {
		return nil
	}
	hs, ok := r.o.Lease.(holderSeer)
	if !ok {
		return nil
	}
	holder, seen := hs.Holder()
	if holder != "" {
		return nil
	}
	if seen.IsZero() {
		return errors.New("no instance holds the leader lease: no writer")
	}
	return fmt.Errorf("no instance holds the leader lease (last seen held %s ago): no writer", time.Since(seen).Round(time.Second))
}

// mayLead says whether this database may hold the lease: neither
// diverged nor past a gap (until re-seeded), and, unless it writes now,
// lacking no change it refused: a rolling upgrade's new standby never
// leads on a database its older peer wrote past.
func (r *Member) mayLead() bool {
	if r.f.Diverged() != nil || r.f.Gap() != nil {
		return false
	}
	//mutate:refused-change-never-leads ./cluster ^TestStandbyRefusingAPeerNeverLeads$
	if r.f.Refused() != nil && !r.writer.Load() {
		return false
	}
	return true
}

// isWriter is the writer state Leadership.IsWriter reads: holding the
// lease, caught up and capturing.
func (r *Member) isWriter() bool { return r.writer.Load() && r.leading() }

// seedReady is the readiness this instance serves seed copies under: the
// follower's, and, unless it writes, no state change of its own waiting
// to be published. A deposed writer's unsent changes are on no other
// replica and will be fenced; a copy must hold what the stream holds.
func (r *Member) seedReady(ctx context.Context) error {
	if !r.isWriter() {
		n, err := r.o.Store.UnsentState(ctx)
		if err != nil {
			return err
		}
		//mutate:seed-not-from-unsent ./cluster ^TestDeposedWriterServesNoSeed$
		if n > 0 {
			return fmt.Errorf("%d state changes of its own are not on the stream yet (written as the writer): a copy would hold rows the stream never got", n)
		}
	}
	return r.f.SeedReady(ctx)
}

// Diverged says why the database must not be served (nil: it may be):
// it holds rows the state stream never got and waits for a re-seed.
func (r *Member) Diverged() error {
	if r == nil {
		return nil
	}
	return r.f.Diverged()
}

// StreamGone says why the state stream is not found now (nil: it is,
// or the last lookup could not tell). While it is gone nothing is
// replicated; the instance is unready (readiness stream_lost).
func (r *Member) StreamGone() error {
	if r == nil {
		return nil
	}
	return r.f.StreamGone()
}

// ClockSkew says why this instance's clock is unfit to lead (nil: it
// is fit, or the lease cannot tell). Such an instance never leads.
func (r *Member) ClockSkew() error {
	if r == nil {
		return nil
	}
	if cs, ok := r.o.Lease.(clockSkewer); ok {
		return cs.ClockSkew()
	}
	return nil
}

// Instance is this instance's stable name.
func (r *Member) Instance() string { return r.instance }

func (r *Member) watch(ctx context.Context) {
	t := time.NewTicker(LeaderPoll)
	defer t.Stop()
	defer func() {
		r.roles.Lock()
		defer r.roles.Unlock()
		r.demote(context.Background())
	}()
	var noWriter bool
	var noWriterSince, created time.Time
	for {
		// No writer for NoWriterGrace (a start looks at the lease first):
		// said once (ERROR) and counted, until one is seen again.
		switch err := r.NoWriter(); {
		case err == nil:
			if noWriter {
				r.log.Info("cluster has a writer again")
			}
			noWriter, noWriterSince = false, time.Time{}
		case noWriterSince.IsZero():
			noWriterSince = time.Now()
		case !noWriter && time.Since(noWriterSince) >= NoWriterGrace:
			noWriter = true
			r.noWriters.Add(1)
			r.log.Error("cluster has no writer: this instance is unready until one is elected", "err", err)
		}
		//mutate:lease-holder-creates-stream ./cluster ^TestLostStreamIsCreatedAgain$
		if r.leading() && r.f.StreamGoneFor() >= StreamRecreateAfter && time.Since(created) >= StreamRecreateAfter &&
			r.creating.CompareAndSwap(false, true) {
			// Not on this loop: a create may take seconds on a cluster,
			// and the loop also demotes.
			created = time.Now()
			r.goRun(func() {
				defer r.creating.Store(false)
				r.createStream(ctx)
			})
		}
		r.roles.Lock()
		lead := r.leading()
		switch {
		case lead && !r.writer.Load():
			r.promote(ctx)
		case !lead && r.writer.Load():
			r.demote(ctx)
		case r.writer.Load() && !r.mayLead():
			// Diverged while writing: stop; promote then yields the lease.
			r.demote(ctx)
		//mutate:new-tenure-demotes ./cluster ^TestNewTenureStartsANewEpoch$
		case r.writer.Load() && r.term() != r.tenure():
			// The lease was lost and won again between two looks: the
			// old epoch is fenced now, so the writer starts over.
			r.demote(ctx)
		}
		r.roles.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// streamMaker is a bus that creates its stream (bus.Bus).
type streamMaker interface {
	EnsureStream(ctx context.Context) error
}

// createStream creates the state stream again: it is gone (its
// JetStream store lost, or deleted) and this instance holds the lease.
// Every replica then reads the new one from its start (followStream),
// and the relay publishes there what it holds.
func (r *Member) createStream(ctx context.Context) {
	sm, ok := r.o.Bus.(streamMaker)
	if !ok {
		return
	}
	r.log.Error("creating the lost state stream again (this instance holds the leader lease)", "err", r.f.StreamGone())
	cctx, cancel := context.WithTimeout(ctx, streamCreateTimeout)
	defer cancel()
	if err := sm.EnsureStream(cctx); err != nil {
		r.log.Error("create the state stream again", "err", err)
		return
	}
	r.o.Republish() // the relay retries at once
}

// tenure is the lease term capture was last switched on in.
func (r *Member) tenure() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.epochTerm
}

// promote catches up, switches capture on and starts the leader-only
// consumers; a catch-up that does not finish is retried at the next tick.
// The caller holds roles.
func (r *Member) promote(ctx context.Context) {
	if !r.mayLead() {
		// It must not write on rows the stream lacks, nor past a gap:
		// leave the lease to an instance that can.
		r.log.Error("leader lease held, but this database must be re-seeded first: releasing the lease, not writing",
			"diverged", r.f.Diverged(), "gap", r.f.Gap(), "refused", r.f.Refused())
		if r.steps {
			return // the lease releases itself (mayLead), and comes back after the re-seed
		}
		if err := r.yield(); err != nil {
			r.log.Warn("release the leader lease", "err", err)
		}
		return
	}
	cctx, cancel := context.WithTimeout(ctx, CatchUpTimeout)
	err := r.f.CatchUp(cctx)
	cancel()
	if err != nil {
		r.log.Warn("leader lease held, catching up before the first write", "err", err)
		return
	}
	term := r.term()
	if !r.leading() || term == 0 {
		return
	}
	// The epoch is the lease term, or one above every epoch applied if
	// that is higher (a lease bucket that was deleted starts its
	// revisions again): always above the writer this one replaces.
	st, err := r.o.Store.ReplicaStatus(ctx)
	if err != nil {
		r.log.Error("read replica status", "err", err)
		return
	}
	r.mu.Lock()
	epoch := uint64(0)
	if r.epochTerm == term {
		epoch = r.epoch // a retry keeps this tenure's epoch
	}
	r.mu.Unlock()
	if epoch == 0 {
		epoch = term
		if st.AppliedEpoch >= term {
			epoch = st.AppliedEpoch + 1
		}
	}
	// After a re-seed, this tenure's included: above every epoch the
	// replaced rows were captured in, so its changes still on their way
	// apply as any writer's and its new ones count as its own. (The store
	// refuses a lower one.)
	epoch = max(epoch, st.OwnSince)
	if err := r.f.EnableCapture(ctx, epoch); err != nil {
		r.log.Error("enable state capture", "err", err)
		return
	}
	// Capture stays on only for a writer: a promotion that stops here is
	// retried at the next tick (enabling it again), and a standby with
	// capture on would neither publish its lost changes again nor apply
	// its own record of them.
	wrote := false
	defer func() {
		if !wrote {
			if err := r.o.Store.DisableCapture(context.WithoutCancel(ctx)); err != nil {
				r.log.Error("disable state capture", "err", err)
			}
		}
	}()
	r.mu.Lock()
	r.epochTerm, r.epoch = term, epoch
	r.mu.Unlock()
	r.o.Kick()
	// The marker is this writer's first change: once the database applied
	// it from the stream, every older writer's change before it is in and
	// every one after it is fenced, on every replica alike.
	actx, cancel := context.WithTimeout(ctx, CatchUpTimeout)
	err = r.f.AwaitEpoch(actx, epoch)
	cancel()
	if err != nil {
		r.log.Warn("leader lease held, waiting for the epoch marker before the first write", "epoch", epoch, "err", err)
		return
	}
	if !r.leading() || r.term() != term {
		return
	}
	//mutate:promote-rechecks-database ./cluster ^TestReseededWriterCaptures$
	if !r.mayLead() {
		// Diverged while catching up (its own older changes reached the
		// stream and were fenced): never a writer on this database.
		r.log.Warn("leader lease held, but the database diverged while catching up: not writing", "diverged", r.f.Diverged(),
			"gap", r.f.Gap())
		return
	}
	if err := r.o.Store.ResumeNumbering(ctx); err != nil {
		r.log.Error("resume state change numbering", "err", err)
		return
	}
	wctx, stop := context.WithCancel(ctx)
	r.mu.Lock()
	r.stopWriting, r.writeCtx = stop, wctx
	for _, fn := range r.leaderOnly {
		r.goWrite(wctx, fn)
	}
	r.mu.Unlock()
	r.writer.Store(true)
	wrote = true
	lag, _ := r.f.Lag(ctx)
	r.log.Info("leader: caught up with the state stream, writing", "instance", r.instance, "applied_seq", lag.AppliedSeq, "epoch", epoch)
}

// demote stops the writer role; the caller holds roles.
func (r *Member) demote(ctx context.Context) {
	if !r.writer.Swap(false) {
		return
	}
	r.mu.Lock()
	stop := r.stopWriting
	r.stopWriting, r.writeCtx = nil, nil
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
	r.wg.Wait()
	// A request served as the writer may still commit: captured, its
	// change reaches the stream (fenced there when it came too late), and
	// this database never holds a row silently (the partition test found
	// audit rows committed just after capture went off, on one instance).
	//mutate:demote-waits-for-writes ./cluster ^TestDeposedWritersLastCommitIsCaptured$
	r.awaitWrites()
	if err := r.o.Store.DisableCapture(ctx); err != nil {
		r.log.Error("disable state capture", "err", err)
	}
	r.log.Warn("standby: leader lease lost", "instance", r.instance)
}

// awaitWrites returns once no mutation served as the writer is in
// flight. One that starts later finds this instance no longer the
// writer (holdWrites) and forwards.
func (r *Member) awaitWrites() {
	// A barrier: taking the lock waits out the writes that hold it.
	r.writes.Lock()
	//lint:ignore SA2001 nothing to guard, the wait is the point
	r.writes.Unlock()
}

// Lag is the replica's lag for reads (nil outside cluster mode or when
// it cannot be read).
func (r *Member) Lag(ctx context.Context) *Lag {
	if r == nil {
		return nil
	}
	l, err := r.f.Lag(ctx)
	if err != nil && l.StreamError == "" {
		return nil // the database itself does not answer
	}
	return &l
}
