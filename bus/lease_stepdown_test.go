package bus

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestLeaseStepsDownAndComesBack: a leader whose database may not write
// (a gap, a divergence) releases the lease within a poll, the other
// holder takes it at once, and it takes none while it may not; once it
// may again (re-seeded) it contends as before, unlike after Close.
func TestLeaseStepsDownAndComesBack(t *testing.T) {
	srv := startServer(t)
	_, js := connect(t, srv.url())
	h := newLeaseHarness(t, js)
	var mayA atomic.Bool
	mayA.Store(true)
	h.leases[0].StepDown(mayA.Load)
	mayA.Store(false)
	took := h.untilLeader(1, 2*leaseTTL)
	if took > leaseTTL/2 {
		t.Errorf("b took %s to lead after a stepped down, want within a poll", took)
	}
	if h.leases[0].IsLeader() {
		t.Fatal("a still leads after stepping down")
	}
	// b stops renewing: the key expires, and a may not take it.
	h.cancel[1]()
	_ = h.leases[1].Close()
	deadline := time.Now().Add(2 * leaseTTL)
	for time.Now().Before(deadline) {
		if h.leases[0].IsLeader() {
			t.Fatal("a took the lease while it may not write")
		}
		time.Sleep(leaseTTL / 10)
	}
	mayA.Store(true)
	h.untilLeader(0, 2*leaseTTL)
	if n := h.both.Load(); n != 0 {
		t.Fatalf("both were leader in %d samples", n)
	}
}
