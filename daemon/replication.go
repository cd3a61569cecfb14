package daemon

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/replica"
)

// Cluster-mode replication defaults.
const (
	leaderPoll      = 100 * time.Millisecond
	catchUpAttempts = 5 * time.Second // one CatchUp's bound; retried while leading
)

// replication runs a clustered instance's side of the shared state: the
// follower applying the leader's state changes (always, so a standby stays
// warm and a leader's own sequence advances), and on every change of
// leadership the switch between the two roles. An instance that wins the
// lease is not the writer until its database has applied the stream's last
// state change; then it captures its own changes and consumes outcomes.
// One that loses the lease stops both at once.
type replication struct {
	d        *Daemon
	f        *replica.Follower
	leading  func() bool   // holds the lease
	term     func() uint64 // the lease term (0: not leading)
	yield    func() error  // releases the lease for good
	instance string

	writer atomic.Bool // leading, caught up, capturing

	mu          sync.Mutex
	stopWriting context.CancelFunc // the leader-only consumers
	writeCtx    context.Context    // theirs, while writer
	leaderOnly  []func(context.Context)
	// epochTerm and epoch: the lease term capture was last switched on in,
	// and the epoch it used, so a retry in the same tenure keeps it.
	epochTerm, epoch uint64
	wg               sync.WaitGroup
}

// whileWriter runs fn (until its context ends) every time this instance
// becomes the writer, and at once when it is one now: the consumers of
// outcomes and remediation requests.
func (r *replication) whileWriter(fn func(context.Context)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leaderOnly = append(r.leaderOnly, fn)
	if r.writeCtx != nil {
		r.goWrite(r.writeCtx, fn)
	}
}

// goWrite runs fn on ctx; callers hold mu.
func (r *replication) goWrite(ctx context.Context, fn func(context.Context)) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		fn(ctx)
	}()
}

func newReplication(d *Daemon, m *messaging, instance string, lease *bus.Lease) (*replication, error) {
	f, err := replica.New(replica.Options{JetStream: m.bus.JetStream(), Stream: m.bus.StreamName(), Prefix: m.bus.Prefix(),
		Store: d.store, Instance: instance, Logger: d.log, Now: d.opts.Now})
	if err != nil {
		return nil, err
	}
	r := &replication{d: d, f: f, leading: lease.IsLeader, term: lease.Term, yield: lease.Close, instance: instance}
	r.leaderOnly = []func(context.Context){func(ctx context.Context) { m.consumeOutcomes(ctx, d) }}
	if err := d.opts.Registerer.Register(replicaCollector{r}); err != nil {
		return nil, fmt.Errorf("replica metrics: %w", err)
	}
	return r, nil
}

// start runs the follower and the leadership watch until ctx ends. A
// clustered instance starts as a standby: its store captures nothing.
func (r *replication) start(ctx context.Context, m *messaging) error {
	if err := r.d.store.DisableCapture(ctx); err != nil {
		return err
	}
	m.goRun(func() error { return r.f.Run(ctx) })
	// Any caught-up instance hands a copy of its database to one that
	// cannot catch up (`patrold db seed`).
	cfg := r.d.Config()
	m.goRun(func() error {
		return r.f.ServeSeeds(ctx, m.bus.Conn(), cfg.DataDir, cfg.NATS.Stream.Replicas, r.f.SeedReady)
	})
	r.fence(ctx)
	m.goRun(func() error { r.watch(ctx); return nil })
	return nil
}

// fence runs before the relay starts. Events left unsent in the outbox
// with state changes among them (a writer killed between its commit and
// the publish) are dropped, remediation outcomes excepted, when, once
// caught up, the stream's last change came from another instance: a newer
// writer wrote since, and replaying older row images over its rows would
// undo them (and their finding events repeat its own). When this instance
// wrote last they are still the newest and are published. Unable to tell
// (no stream), they are kept.
func (r *replication) fence(ctx context.Context) {
	n, err := r.d.store.UnsentState(ctx)
	if err != nil || n == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, catchUpAttempts)
	err = r.f.CatchUp(cctx)
	cancel()
	if err != nil {
		r.d.log.Warn("unsent state changes kept: cannot read the state stream to tell whether they are stale", "rows", n, "err", err)
		return
	}
	st, err := r.d.store.ReplicaStatus(ctx)
	if err != nil || st.AppliedOrigin == "" || st.AppliedOrigin == r.instance {
		return
	}
	// Remediation outcomes stay: they answer requests the writer of
	// the stream knows.
	dropped, err := r.d.store.DropUnsent(ctx, contracts.TypeRemediationOutcome)
	if err != nil {
		r.d.log.Error("drop stale outbox events", "err", err)
		return
	}
	r.d.log.Warn("unsent state changes dropped: another instance wrote since this one stopped", "rows", dropped, "state_changes", n, "last_writer", st.AppliedOrigin)
}

// IsWriter reports whether this instance may write now.
func (r *replication) IsWriter() bool { return r.writer.Load() && r.leading() }

func (r *replication) watch(ctx context.Context) {
	t := time.NewTicker(leaderPoll)
	defer t.Stop()
	defer r.demote(context.Background())
	for {
		lead := r.leading()
		switch {
		case lead && !r.writer.Load():
			r.promote(ctx)
		case !lead && r.writer.Load():
			r.demote(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// promote catches up, switches capture on and starts the leader-only
// consumers; a catch-up that does not finish is retried at the next tick.
func (r *replication) promote(ctx context.Context) {
	if err := r.f.Gap(); err != nil {
		// It can never write: leave the lease to an instance that can.
		r.d.log.Error("leader lease held, but this database cannot catch up: releasing the lease, not writing until re-seeded", "err", err)
		if err := r.yield(); err != nil {
			r.d.log.Warn("release the leader lease", "err", err)
		}
		return
	}
	cctx, cancel := context.WithTimeout(ctx, catchUpAttempts)
	err := r.f.CatchUp(cctx)
	cancel()
	if err != nil {
		r.d.log.Warn("leader lease held, catching up before the first write", "err", err)
		return
	}
	term := r.term()
	if !r.leading() || term == 0 {
		return
	}
	// The epoch is the lease term, or one above every epoch applied if
	// that is higher (a lease bucket that was deleted starts its
	// revisions again): always above the writer this one replaces.
	st, err := r.d.store.ReplicaStatus(ctx)
	if err != nil {
		r.d.log.Error("read replica status", "err", err)
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
	if err := r.f.EnableCapture(ctx, epoch); err != nil {
		r.d.log.Error("enable state capture", "err", err)
		return
	}
	r.mu.Lock()
	r.epochTerm, r.epoch = term, epoch
	r.mu.Unlock()
	r.d.msg.kick()
	// The marker is this writer's first change: once the database applied
	// it from the stream, every older writer's change before it is in and
	// every one after it is fenced, on every replica alike.
	actx, cancel := context.WithTimeout(ctx, catchUpAttempts)
	err = r.f.AwaitEpoch(actx, epoch)
	cancel()
	if err != nil {
		r.d.log.Warn("leader lease held, waiting for the epoch marker before the first write", "epoch", epoch, "err", err)
		return
	}
	if !r.leading() || r.term() != term {
		return
	}
	if err := r.d.store.ResumeNumbering(ctx); err != nil {
		r.d.log.Error("resume state change numbering", "err", err)
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
	lag, _ := r.f.Lag(ctx)
	r.d.log.Info("leader: caught up with the state stream, writing", "instance", r.instance, "applied_seq", lag.AppliedSeq, "epoch", epoch)
}

func (r *replication) demote(ctx context.Context) {
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
	if err := r.d.store.DisableCapture(ctx); err != nil {
		r.d.log.Error("disable state capture", "err", err)
	}
	r.d.log.Warn("standby: leader lease lost", "instance", r.instance)
}

// lag is the replica's lag for reads (nil outside cluster mode).
func (r *replication) lag(ctx context.Context) *replica.Lag {
	if r == nil {
		return nil
	}
	l, err := r.f.Lag(ctx)
	if err != nil {
		return nil
	}
	return &l
}

var (
	replicaWriterDesc = prometheus.NewDesc("patrold_replica_writer",
		"Cluster mode: 1 while this instance holds the lease and has caught up with the state stream (it schedules and writes).", nil, nil)
	replicaAppliedDesc = prometheus.NewDesc("patrold_replica_applied_sequence",
		"Cluster mode: stream sequence of the last state change this database applied.", nil, nil)
	replicaLastDesc = prometheus.NewDesc("patrold_replica_last_sequence",
		"Cluster mode: stream sequence of the last state change on the stream.", nil, nil)
	replicaRefusedDesc = prometheus.NewDesc("patrold_replica_refused_total",
		"Cluster mode: malformed state changes skipped since the start.", nil, nil)
	replicaFencedDesc = prometheus.NewDesc("patrold_replica_fenced_total",
		"Cluster mode: state changes ignored as written by a deposed writer (an epoch below one applied).", nil, nil)
	replicaEpochDesc = prometheus.NewDesc("patrold_replica_epoch",
		"Cluster mode: the highest writer epoch the database applied.", nil, nil)
)

// replicaCollector reads the replica's position at scrape time.
type replicaCollector struct{ r *replication }

func (c replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- replicaWriterDesc
	ch <- replicaAppliedDesc
	ch <- replicaLastDesc
	ch <- replicaRefusedDesc
	ch <- replicaFencedDesc
	ch <- replicaEpochDesc
}

func (c replicaCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(replicaWriterDesc, prometheus.GaugeValue, boolValue(c.r.IsWriter()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if l := c.r.lag(ctx); l != nil {
		ch <- prometheus.MustNewConstMetric(replicaAppliedDesc, prometheus.GaugeValue, float64(l.AppliedSeq))
		ch <- prometheus.MustNewConstMetric(replicaLastDesc, prometheus.GaugeValue, float64(l.LastSeq))
		ch <- prometheus.MustNewConstMetric(replicaRefusedDesc, prometheus.CounterValue, float64(l.Dropped))
		ch <- prometheus.MustNewConstMetric(replicaFencedDesc, prometheus.CounterValue, float64(l.Fenced))
		ch <- prometheus.MustNewConstMetric(replicaEpochDesc, prometheus.GaugeValue, float64(l.Epoch))
	}
}
