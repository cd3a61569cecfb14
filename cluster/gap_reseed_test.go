package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/store/storetest"
)

// gappedWriter is writer a whose stream lost its first changes (purged,
// as if aged out): a standby joining now meets a gap. now is the time
// of a's first run.
func gappedWriter(t *testing.T) (a *node, now time.Time) {
	t.Helper()
	a = newNodes(t, "a")[0]
	replicate(t, 1, a)
	now = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commitRun(t, a.st, now, obs("vm-1", "cpu"))
	a.rel.Kick()
	caughtUp(t, a, a.f)
	purgeAll(t, a)
	commitRun(t, a.st, now.Add(time.Hour), obs("vm-1", "cpu"), obs("vm-2", "disk"))
	a.rel.Kick()
	caughtUp(t, a, a.f)
	return a, now
}

// TestGappedStandbyReseedsItself: a standby that joins after the first
// changes left the stream meets a gap no wait closes. It says so once
// (WARN, patrold_replica_gaps_total, the gap in its lag: unready),
// re-seeds itself from the writer's signed copy without an operator,
// and then follows the stream: its rows end equal to the writer's.
func TestGappedStandbyReseedsItself(t *testing.T) {
	ctx := context.Background()
	a, now := gappedWriter(t)
	run(t, func(ctx context.Context) error { return a.f.ServeSeeds(ctx, a.b.Conn(), t.TempDir(), 1, a.f.SeedReady) })

	d := newNode(t, clientOf(a), "d")
	reg := prometheus.NewRegistry()
	m, logs := startMember(t, cluster.Options{Bus: d.b, Lease: standbyLease{}, Leadership: cluster.NewLeadership(true, time.Now), Store: d.st,
		Instance: "d", DataDir: t.TempDir(), Replicas: 1, Kick: d.rel.Kick, Registerer: reg,
		HoldFor: time.Second})
	testkit.Eventually(t, reseedWithin, "d re-seeded itself", func() bool {
		l := m.Lag(ctx)
		return l != nil && l.Gap == "" && !l.Behind && strings.Contains(logs.String(), "database with a gap re-seeded")
	})
	if n := strings.Count(logs.String(), `"level":"WARN","msg":"replica cannot catch up`); n != 1 {
		t.Errorf("%d warnings of the gap, want 1", n)
	}
	for name, want := range map[string]float64{"patrold_replica_gaps_total": 1, "patrold_replica_reseeds_total": 1} {
		if got := metricValue(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	storetest.SameDB(t, "d after its re-seed", replicated(storetest.DumpDB(t, d.st.Path())), replicated(storetest.DumpDB(t, a.st.Path())))

	// d follows the stream on from the copy's position.
	commitRun(t, a.st, now.Add(2*time.Hour), obs("vm-3", "mem"))
	a.rel.Kick()
	caughtUp(t, a, a.f)
	testkit.Eventually(t, 10*time.Second, "d caught up", func() bool {
		l := m.Lag(ctx)
		return l != nil && !l.Behind && l.LastSeq > 0
	})
	storetest.SameDB(t, "d following a", replicated(storetest.DumpDB(t, d.st.Path())), replicated(storetest.DumpDB(t, a.st.Path())))
}
