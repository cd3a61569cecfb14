package bus

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/internal/testkit"
)

const leaseTTL = time.Second

type leaseHarness struct {
	t      *testing.T
	leases [2]*Lease
	cancel [2]context.CancelFunc
	ticks  [2]atomic.Int64
	both   atomic.Int64 // samples where both claimed leadership
	stop   chan struct{}
	wg     sync.WaitGroup
}

// newLeaseHarness runs two lease holders on one server and a scheduler
// loop per holder that "ticks" only while it is leader, like the patrol
// scheduler would.
func newLeaseHarness(t *testing.T, js jetstream.JetStream) *leaseHarness {
	h := &leaseHarness{t: t, stop: make(chan struct{})}
	for i, holder := range []string{"patrold-a", "patrold-b"} {
		l, err := NewLease(js, LeaseOptions{Key: "scheduler", Holder: holder, TTL: leaseTTL, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		h.leases[i], h.cancel[i] = l, cancel
		h.wg.Add(1)
		go func() { defer h.wg.Done(); _ = l.Run(ctx) }()
		if i == 0 { // make a the first leader
			testkit.Eventually(t, 3*time.Second, "a leads", l.IsLeader)
		}
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
			a, b := h.leases[0].IsLeader(), h.leases[1].IsLeader()
			if a && b {
				h.both.Add(1)
			}
			if a {
				h.ticks[0].Add(1)
			}
			if b {
				h.ticks[1].Add(1)
			}
		}
	}()
	t.Cleanup(h.close)
	return h
}

func (h *leaseHarness) close() {
	select {
	case <-h.stop:
		return
	default:
	}
	close(h.stop)
	for i := range h.leases {
		h.cancel[i]()
		_ = h.leases[i].Close()
	}
	h.wg.Wait()
}

// revOf is the revision l last wrote: each of its renewals moves it by
// one, since only the holder writes the key.
func revOf(l *Lease) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rev
}

// renewals waits until l wrote the key n times after revision from.
func renewals(t *testing.T, l *Lease, from, n uint64, within time.Duration) {
	t.Helper()
	testkit.Eventually(t, within, "renewals", func() bool { return revOf(l) >= from+n })
}

// untilLeader waits for holder i and returns how long it took.
func (h *leaseHarness) untilLeader(i int, within time.Duration) time.Duration {
	start := time.Now()
	testkit.Eventually(h.t, within, "takeover", h.leases[i].IsLeader)
	return time.Since(start)
}

func TestLeaseOneLeaderAndHandoverOnClose(t *testing.T) {
	srv := startServer(t)
	_, js := connect(t, srv.url())
	h := newLeaseHarness(t, js)

	renewals(t, h.leases[0], revOf(h.leases[0]), 6, 4*leaseTTL) // two TTLs: a keeps it, b never gets it
	if h.ticks[0].Load() == 0 || h.ticks[1].Load() != 0 {
		t.Fatalf("ticks a=%d b=%d, want only a", h.ticks[0].Load(), h.ticks[1].Load())
	}
	if err := h.leases[0].Close(); err != nil {
		t.Fatal(err)
	}
	aTicks := h.ticks[0].Load()
	took := h.untilLeader(1, 2*leaseTTL)
	if took > leaseTTL {
		t.Errorf("b took %s to lead after a released, want within one TTL (%s)", took, leaseTTL)
	}
	renewals(t, h.leases[1], revOf(h.leases[1]), 3, 3*leaseTTL) // a TTL of b's tenure
	if h.ticks[0].Load() != aTicks || h.ticks[1].Load() == 0 {
		t.Errorf("after handover ticks a=%d (was %d) b=%d", h.ticks[0].Load(), aTicks, h.ticks[1].Load())
	}
	if n := h.both.Load(); n != 0 {
		t.Fatalf("both were leader in %d samples", n)
	}
}

// When the leader's renewals stop (hung or partitioned, never released),
// it stops claiming leadership within one TTL of its last renewal and the
// other holder takes over once the key expires.
func TestLeaseTakeoverWhenRenewalsStop(t *testing.T) {
	srv := startServer(t)
	_, js := connect(t, srv.url())
	h := newLeaseHarness(t, js)
	renewals(t, h.leases[0], revOf(h.leases[0]), 1, 2*leaseTTL)
	renewed := time.Now() // a's last renewal started before this

	h.cancel[0]() // a's Run returns: no more renewals, no release
	testkit.Eventually(t, leaseTTL+100*time.Millisecond, "a gives up", func() bool { return !h.leases[0].IsLeader() })
	// The poll that sees it adds up to its interval (20 ms) and a
	// scheduling delay.
	if d := time.Since(renewed); d > leaseTTL+50*time.Millisecond {
		t.Errorf("a still leader %s after its last renewal", d)
	}
	// Expiry is TTL after a's last write (just before the stop),
	// plus b's poll (TTL/5) and the server's expiry timer.
	took := h.untilLeader(1, 3*leaseTTL)
	if took > leaseTTL+leaseTTL/2 {
		t.Errorf("b took %s to lead after a stopped renewing", took)
	}
	if n := h.both.Load(); n != 0 {
		t.Fatalf("both were leader in %d samples", n)
	}
}

// A holder whose key was taken over (here: deleted and re-created by
// another holder) loses leadership on its next renewal instead of waiting
// for the TTL.
func TestLeaseLostOnRevisionMismatch(t *testing.T) {
	srv := startServer(t)
	_, js := connect(t, srv.url())
	l, err := NewLease(js, LeaseOptions{Holder: "a", TTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Run(ctx) }()
	testkit.Eventually(t, 3*time.Second, "a leads", l.IsLeader)
	kv, err := js.KeyValue(ctx, contracts.DefaultLeaseBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, DefaultLeaseKey, []byte("intruder")); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 2*time.Second, "a loses at its next renewal", func() bool { return !l.IsLeader() })
	// Two more attempts of a's, each finding the intruder's key.
	seen := func() time.Time {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.otherSeen
	}
	for range 2 {
		last := seen()
		testkit.Eventually(t, 3*time.Second, "a tries the key again", func() bool { return seen().After(last) })
	}
	if l.IsLeader() {
		t.Fatal("a took back a key held by another holder")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, DefaultLeaseKey)
	if err != nil || string(e.Value()) != "intruder" {
		t.Fatalf("Close touched another holder's key: %v %v", e, err)
	}
}

func TestNewLeaseNamesBadOptions(t *testing.T) {
	var js KeyValueStores = jetstream.JetStream(nil)
	if _, err := NewLease(js, LeaseOptions{Holder: "a"}); err == nil || !strings.Contains(err.Error(), "JetStream") {
		t.Errorf("nil js: %v", err)
	}
	srv := startServer(t)
	_, real := connect(t, srv.url())
	for want, o := range map[string]LeaseOptions{
		"Holder":            {},
		"nats.lease.ttl":    {Holder: "a", TTL: 10 * time.Millisecond},
		"nats.lease.bucket": {Holder: "a", Bucket: "bad bucket"},
	} {
		if _, err := NewLease(real, o); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}

// flakyKV fails the first n bucket creations, then uses the real server.
type flakyKV struct {
	KeyValueStores
	n     atomic.Int64
	calls atomic.Int64
}

func (f *flakyKV) CreateOrUpdateKeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	if f.calls.Add(1) <= f.n.Load() {
		return nil, context.DeadlineExceeded
	}
	return f.KeyValueStores.CreateOrUpdateKeyValue(ctx, cfg)
}

// A bucket that cannot be created at first (JetStream not answering yet)
// delays the lease; Run keeps trying and leads once it can, instead of
// returning and leaving the instance a standby for good.
func TestLeaseRetriesBucketCreation(t *testing.T) {
	srv := startServer(t)
	_, js := connect(t, srv.url())
	f := &flakyKV{KeyValueStores: js}
	f.n.Store(2)
	l, err := NewLease(f, LeaseOptions{Holder: "a", TTL: leaseTTL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	testkit.Eventually(t, 5*time.Second, "a leads after two failed bucket creations", l.IsLeader)
	if got := f.calls.Load(); got != 3 {
		t.Fatalf("bucket creations: %d, want 3 (two failed, one made it)", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
