package cluster_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/records"
	"github.com/patrold/patrold/store/storetest"
)

// slowApply is a store that takes a while over each change, as a
// replica on a busy disk does.
type slowApply struct {
	*store.Store
	per time.Duration
}

func (s *slowApply) ApplyState(ctx context.Context, seq uint64, self string, c contracts.StateChange, now time.Time) (records.Apply, error) {
	time.Sleep(s.per)
	return s.Store.ApplyState(ctx, seq, self, c, now)
}

// TestSeedFromAReplicaUnderSteadyWrites: while a writer keeps
// committing, a replica is always a few changes behind the stream (in
// the partition test the writer itself was, 6 of 4286). Asked for a
// copy, it catches up with the stream as the request found it and
// serves one, rather than refusing every request until writes stop.
// The copy, followed on, ends with the writer's rows exactly.
func TestSeedFromAReplicaUnderSteadyWrites(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	f, err := cluster.NewFollower(cluster.FollowerOptions{JetStream: b.b.JetStream(), Stream: b.b.StreamName(), Prefix: b.b.Prefix(),
		Store: &slowApply{Store: b.st, per: 5 * time.Millisecond}, Instance: "b", Guard: b.b.Guard()})
	if err != nil {
		t.Fatal(err)
	}
	b.f = f
	replicate(t, 1, a, b)
	run(t, func(ctx context.Context) error { return b.f.ServeSeeds(ctx, b.b.Conn(), t.TempDir(), 1, b.f.SeedReady) })

	// Steady writes: a silence every few milliseconds.
	loadCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		for i := 0; loadCtx.Err() == nil; i++ {
			if _, err := a.st.AddSilence(ctx, findings.Silence{Matchers: findings.Matchers{Resource: fmt.Sprintf("vm-%d", i)}, Comment: "load",
				Author: "op", StartsAt: now, EndsAt: now.Add(time.Hour)}, now); err != nil {
				t.Error(err)
				return
			}
			a.rel.Kick()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	testkit.Eventually(t, 10*time.Second, "b is behind the stream", func() bool {
		lag, err := b.f.Lag(ctx)
		return err == nil && lag.LastSeq > lag.AppliedSeq+10
	})
	dst := filepath.Join(t.TempDir(), "patrold.db")
	seed, err := cluster.FetchSeed(ctx, a.b.Conn(), a.b.JetStream(), a.b.Guard(), a.b.Prefix(), dst)
	stop()
	wg.Wait()
	if err != nil {
		t.Fatalf("seed from a replica behind a steady writer: %v", err)
	}
	if seed.Origin != "b" {
		t.Fatalf("seed %+v, want one from b", seed)
	}

	// The copy follows the stream on and ends with a's rows.
	st, err := store.Open(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, err := cluster.NewFollower(cluster.FollowerOptions{JetStream: a.b.JetStream(), Stream: a.b.StreamName(), Prefix: a.b.Prefix(), Store: st,
		Instance: "d", Guard: a.b.Guard()})
	if err != nil {
		t.Fatal(err)
	}
	run(t, d.Run)
	caughtUp(t, a, d, b.f)
	storetest.SameDB(t, "the seeded copy followed on", replicated(storetest.DumpDB(t, dst)), replicated(storetest.DumpDB(t, a.st.Path())))
}
