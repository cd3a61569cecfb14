package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/internal/testkit"
)

// TestReseedOutlivesAHungSeedServer: the first seed request of a
// standby past a gap reaches an instance that never answers (frozen:
// still subscribed, its process stopped) and then leaves. The standby
// gives that attempt reseedAttemptMin (10 s) and re-seeds from a live
// instance at its next one, well within 20 s; with the former 30 s first
// attempt it took over 31 s, longer than a whole freeze round of the
// partition tests.
func TestReseedOutlivesAHungSeedServer(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a")
	a := nodes[0]
	replicate(t, 1, a)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commitRun(t, a.st, now, obs("vm-1", "cpu"))
	a.rel.Kick()
	caughtUp(t, a, a.f)
	purgeAll(t, a)
	commitRun(t, a.st, now.Add(time.Hour), obs("vm-1", "cpu"), obs("vm-2", "disk"))
	a.rel.Kick()
	caughtUp(t, a, a.f)

	// The hung instance: in the seed queue, it takes one request and
	// never answers.
	hung := make(chan time.Time, 1)
	var sub *nats.Subscription
	sub, err := a.b.Conn().QueueSubscribe(contracts.SeedSubject(a.b.Prefix()), contracts.SeedQueue, func(*nats.Msg) {
		_ = sub.Unsubscribe()
		hung <- time.Now()
	})
	if err != nil {
		t.Fatal(err)
	}
	d := newNode(t, clientOf(a), "d")
	m, logs := startMember(t, cluster.Options{Bus: d.b, Lease: standbyLease{}, Leadership: cluster.NewLeadership(true, time.Now), Store: d.st,
		Instance: "d", DataDir: t.TempDir(), Replicas: 1, Kick: d.rel.Kick, Registerer: prometheus.NewRegistry(), HoldFor: time.Second})
	var asked time.Time
	select {
	case asked = <-hung:
	case <-time.After(reseedWithin):
		t.Fatalf("no seed request within %s", reseedWithin)
	}
	run(t, func(ctx context.Context) error { return a.f.ServeSeeds(ctx, a.b.Conn(), t.TempDir(), 1, a.f.SeedReady) })
	testkit.Eventually(t, 20*time.Second, "d re-seeded itself from the live instance", func() bool {
		l := m.Lag(ctx)
		return l != nil && l.Gap == "" && !l.Behind && strings.Contains(logs.String(), "database with a gap re-seeded")
	})
	if took := time.Since(asked); took > 20*time.Second {
		t.Errorf("re-seeded %s after the hung request, want within 20 s", took.Round(time.Second))
	}
}
