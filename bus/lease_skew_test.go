package bus

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patrold/patrold/internal/testkit"
)

// TestSkewedClockNeverLeads: an instance whose clock is 5 min off the
// NATS server's (either way) would hold the lease and never write: its
// signed changes are refused outside the replay window. It never counts
// itself leader, says why (ClockSkew), and leaves the key to an instance
// in step, which takes it. Once its clock is right it may lead again.
func TestSkewedClockNeverLeads(t *testing.T) {
	for _, off := range []time.Duration{5 * time.Minute, -5 * time.Minute} {
		t.Run(off.String(), func(t *testing.T) {
			srv := startServer(t)
			_, js := connect(t, srv.url())
			var skew atomic.Int64
			skew.Store(int64(off))
			var led atomic.Bool
			skewed, err := NewLease(js, LeaseOptions{Key: "scheduler", Holder: "skewed", TTL: leaseTTL, Logger: testLogger(t),
				Now:      func() time.Time { return time.Now().Add(time.Duration(skew.Load())) },
				OnChange: func(leader bool) { led.Store(led.Load() || leader) }})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() { _ = skewed.Run(ctx) }()
			want := "this instance's clock is 5m0s ahead of the NATS server's (at most 1m0s either way): fix its time (NTP)"
			if off < 0 {
				want = "this instance's clock is 5m0s behind the NATS server's (at most 1m0s either way): fix its time (NTP)"
			}
			testkit.Eventually(t, 5*time.Second, "the skew is seen", func() bool {
				err := skewed.ClockSkew()
				return err != nil && err.Error() == want
			})
			// Alone, it keeps trying and never leads.
			testkit.Eventually(t, 5*time.Second, "a few more attempts", func() bool { return skewed.ClockSkew() != nil && !skewed.IsLeader() })
			inStep, err := NewLease(js, LeaseOptions{Key: "scheduler", Holder: "in-step", TTL: leaseTTL, Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = inStep.Run(ctx) }()
			testkit.Eventually(t, 5*time.Second, "the instance in step leads", inStep.IsLeader)
			if led.Load() || skewed.IsLeader() {
				t.Fatal("the skewed instance counted itself leader")
			}
			if inStep.ClockSkew() != nil {
				t.Fatalf("in step: %v", inStep.ClockSkew())
			}
			// Its clock fixed, it leads once the other lets go.
			skew.Store(0)
			if err := inStep.Close(); err != nil {
				t.Fatal(err)
			}
			testkit.Eventually(t, 5*time.Second, "the fixed instance leads", func() bool {
				return skewed.IsLeader() && errors.Is(skewed.ClockSkew(), nil)
			})
		})
	}
}
