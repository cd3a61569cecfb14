package cluster_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/internal/testkit"
)

// staleObjects is a JetStream whose object store reads come from a
// replica still catching up: an object just stored is not found yet.
type staleObjects struct{ jetstream.JetStream }

func (s staleObjects) CreateOrUpdateObjectStore(ctx context.Context, cfg jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error) {
	o, err := s.JetStream.CreateOrUpdateObjectStore(ctx, cfg)
	return staleStore{o}, err
}

type staleStore struct{ jetstream.ObjectStore }

func (staleStore) GetInfo(context.Context, string, ...jetstream.GetObjectInfoOpt) (*jetstream.ObjectInfo, error) {
	return nil, jetstream.ErrObjectNotFound
}

func (staleStore) UpdateMeta(context.Context, string, jetstream.ObjectMeta) error {
	return jetstream.ErrUpdateMetaDeleted
}

// TestSeedServedWhileTheBucketLags: right after a partition healed, the
// seed bucket's reads came from a lagging replica, and every copy was
// refused ("seed upload: nats: cannot update meta for a deleted
// object") while diverged instances waited. A copy is stored under its
// final name, read back by no one but the instance that asked.
func TestSeedServedWhileTheBucketLags(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	replicate(t, 1, a, b)
	f, err := cluster.NewFollower(cluster.FollowerOptions{JetStream: staleObjects{b.b.JetStream()}, Stream: b.b.StreamName(),
		Prefix: b.b.Prefix(), Store: b.st, Instance: "b", Guard: b.b.Guard()})
	if err != nil {
		t.Fatal(err)
	}
	caughtUp(t, a, b.f)
	run(t, func(ctx context.Context) error { return f.ServeSeeds(ctx, b.b.Conn(), t.TempDir(), 1, b.f.SeedReady) })
	for i := range 2 { // two copies at one sequence
		var seed contracts.Seed
		var err error
		testkit.Eventually(t, 10*time.Second, "b serves seed requests", func() bool {
			seed, err = cluster.FetchSeed(ctx, a.b.Conn(), a.b.JetStream(), a.b.Guard(), a.b.Prefix(), filepath.Join(t.TempDir(), "patrold.db"))
			return err == nil || !strings.Contains(err.Error(), "no patrold instance of the cluster answers")
		})
		if err != nil {
			t.Fatalf("copy %d: %v", i+1, err)
		}
		if seed.Origin != "b" {
			t.Fatalf("copy %d: %+v", i+1, seed)
		}
	}
}
