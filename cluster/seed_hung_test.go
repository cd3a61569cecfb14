package cluster_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/internal/testkit"
)

// TestReseedOutlivesAHungSeedServer: an instance that hangs in the seed
// queue (a frozen process stays subscribed and never answers) beside a
// live one. A standby past a gap asks the instance that first offered,
// never the queue, so it re-seeds within one offer round and is never
// held by the hung one. Asking the queue, half the requests waited a
// whole attempt (30 s at first), longer than a freeze round of the
// partition tests.
func TestReseedOutlivesAHungSeedServer(t *testing.T) {
	ctx := context.Background()
	a, _ := gappedWriter(t)

	nc := a.b.Conn()
	var hung atomic.Int32
	if _, err := nc.QueueSubscribe(contracts.SeedSubject(a.b.Prefix()), contracts.SeedQueue, func(*nats.Msg) { hung.Add(1) }); err != nil {
		t.Fatal(err)
	}
	// Every subject a seed request was sent on.
	var mu sync.Mutex
	var subjects []string
	if _, err := nc.Subscribe(contracts.SeedSubject(a.b.Prefix())+".>", func(m *nats.Msg) {
		mu.Lock()
		subjects = append(subjects, m.Subject)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Subscribe(contracts.SeedSubject(a.b.Prefix()), func(m *nats.Msg) {
		mu.Lock()
		subjects = append(subjects, m.Subject)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	run(t, func(ctx context.Context) error { return a.f.ServeSeeds(ctx, nc, t.TempDir(), 1, a.f.SeedReady) })

	d := newNode(t, clientOf(a), "d")
	start := time.Now()
	m, logs := startMember(t, cluster.Options{Bus: d.b, Lease: standbyLease{}, Leadership: cluster.NewLeadership(true, time.Now), Store: d.st,
		Instance: "d", DataDir: t.TempDir(), Replicas: 1, Kick: d.rel.Kick, Registerer: prometheus.NewRegistry(), HoldFor: time.Second})
	testkit.Eventually(t, reseedWithin, "d re-seeded itself from the live instance", func() bool {
		l := m.Lag(ctx)
		return l != nil && l.Gap == "" && !l.Behind && strings.Contains(logs.String(), "database with a gap re-seeded")
	})
	mu.Lock()
	got := slices.Clone(subjects)
	mu.Unlock()
	p := a.b.Prefix()
	if want := []string{contracts.SeedOfferSubject(p), contracts.SeedToSubject(p, "a")}; !slices.Equal(got, want) || hung.Load() != 0 {
		t.Errorf("seed requests on %v (the hung instance got %d), want %v and none on the queue", got, hung.Load(), want)
	}
	if n := strings.Count(logs.String(), "not re-seeded yet"); n != 0 {
		t.Errorf("%d failed attempts before the re-seed (%s after the start), want none", n, time.Since(start).Round(time.Second))
	}
}
