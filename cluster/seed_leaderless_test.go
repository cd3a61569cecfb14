package cluster_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/internal/testkit"
)

// leaderless is a JetStream whose streams have no leader (the majority
// side of a partition electing one): a stream lookup is never answered.
type leaderless struct{ jetstream.JetStream }

func (leaderless) Stream(ctx context.Context, _ string) (jetstream.Stream, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestSeedRequestAnsweredWhileTheStreamHasNoLeader: the partition test
// saw diverged instances wait minutes for a copy, unready, because the
// serving instance's stream lookup was never answered. A seed request
// is answered (a refusal the asker retries) within SeedCallWait and a
// margin, never held for SeedTimeout.
func TestSeedRequestAnsweredWhileTheStreamHasNoLeader(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	replicate(t, 1, a, b)
	caughtUp(t, a, b.f)
	f, err := cluster.NewFollower(cluster.FollowerOptions{JetStream: leaderless{b.b.JetStream()}, Stream: b.b.StreamName(),
		Prefix: b.b.Prefix(), Store: b.st, Instance: "b", Guard: b.b.Guard()})
	if err != nil {
		t.Fatal(err)
	}
	run(t, func(ctx context.Context) error { return f.ServeSeeds(ctx, b.b.Conn(), t.TempDir(), 1, f.SeedReady) })
	var took time.Duration
	testkit.Eventually(t, 10*time.Second, "b serves seed requests", func() bool {
		start := time.Now()
		fctx, cancel := context.WithTimeout(ctx, cluster.SeedCallWait+20*time.Second)
		defer cancel()
		_, err = cluster.FetchSeed(fctx, a.b.Conn(), a.b.JetStream(), a.b.Guard(), a.b.Prefix(), filepath.Join(t.TempDir(), "patrold.db"))
		took = time.Since(start)
		return err == nil || !strings.Contains(err.Error(), "no patrold instance of the cluster answers")
	})
	if err == nil || !strings.Contains(err.Error(), "seed: b refused: state stream: context deadline exceeded") {
		t.Fatalf("FetchSeed = %v after %s, want b's refusal", err, took)
	}
	if took > cluster.SeedCallWait+5*time.Second {
		t.Errorf("the refusal took %s, over SeedCallWait (%s) and 5 s", took, cluster.SeedCallWait)
	}
}
