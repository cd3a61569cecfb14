package bus_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/internal/testkit"
)

// TestStartTogetherOnFreshCluster: three buses started at once on a fresh
// three-node JetStream cluster all create (or find) the R3 stream. A
// clustered JetStream leaves all but one of such concurrent creates
// unanswered; each round uses a new stream so every round races.
func TestStartTogetherOnFreshCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	urls := natstest.Cluster(t, 3)
	for round := range 4 {
		errs := make([]error, len(urls))
		var wg sync.WaitGroup
		for i, url := range urls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o := bus.Options{URL: url, Stream: bus.StreamOptions{Name: fmt.Sprintf("RACE_%d", round), Replicas: 3}}
				o.SubjectPrefix = fmt.Sprintf("race%d", round)
				b, err := bus.New(o, nil, nil)
				if err != nil {
					errs[i] = err
					return
				}
				errs[i] = b.Start(context.Background())
				_ = b.Close()
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d: bus %d on %s: %v", round, i, urls[i], err)
			}
		}
	}
}

// TestLeaseSurvivesBucketServerLoss: with Replicas 3 the lease bucket lives
// on every server of a three-node cluster. So shutting down the server that
// leads the bucket's stream leaves a leader within a few TTLs. An R1 bucket
// would be gone with it, and nobody could lead again.
func TestLeaseSurvivesBucketServerLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	srvs := natstest.ClusterServers(t, 3)
	var urls []string
	for _, s := range srvs {
		urls = append(urls, s.ClientURL())
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.ReconnectWait(100*time.Millisecond), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	const ttl = time.Second
	l, err := bus.NewLease(js, bus.LeaseOptions{Holder: "patrold-a", TTL: ttl, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = l.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitLeader := func(what string) {
		t.Helper()
		testkit.Eventually(t, 15*time.Second, "a leader after "+what, l.IsLeader)
	}
	waitLeader("start")
	ictx, icancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer icancel()
	s, err := js.Stream(ictx, "KV_"+contracts.DefaultLeaseBucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ictx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Replicas != 3 || info.Cluster == nil || info.Cluster.Leader == "" {
		t.Fatalf("lease bucket stream: %d replicas, cluster %+v; want 3 with a leader", info.Config.Replicas, info.Cluster)
	}
	for _, srv := range srvs {
		if srv.Name() == info.Cluster.Leader {
			srv.Shutdown()
			srv.WaitForShutdown()
		}
	}
	// Leadership may lapse while the bucket's stream elects a new leader;
	// it must come back and hold for three TTLs.
	var since time.Time
	testkit.Eventually(t, 15*time.Second, fmt.Sprintf("leadership held for %s after the bucket's server went down", 3*ttl), func() bool {
		switch {
		case !l.IsLeader():
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		}
		return !since.IsZero() && time.Since(since) >= 3*ttl
	})
}

// TestLeasesStartTogetherOnFreshCluster: three leases (R3 bucket) started
// at once on a fresh cluster, where the bucket's concurrent creates may go
// unanswered, all end up able to lead: each in turn takes over when the
// leader before it closes.
func TestLeasesStartTogetherOnFreshCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	urls := natstest.Cluster(t, 3)
	leases := make([]*bus.Lease, len(urls))
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); wg.Wait() }()
	for i, url := range urls {
		js := natstest.JetStream(t, url)
		var err error
		if leases[i], err = bus.NewLease(js, bus.LeaseOptions{Holder: fmt.Sprintf("patrold-%d", i), TTL: time.Second, Replicas: 3}); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range leases {
		wg.Add(1)
		go func() { defer wg.Done(); _ = l.Run(ctx) }()
	}
	open := slices.Clone(leases)
	for len(open) > 0 {
		var leader *bus.Lease
		testkit.Eventually(t, 10*time.Second, fmt.Sprintf("a leader among the %d open leases", len(open)), func() bool {
			for _, l := range open {
				if l.IsLeader() {
					leader = l
				}
			}
			return leader != nil
		})
		if err := leader.Close(); err != nil {
			t.Fatal(err)
		}
		open = slices.DeleteFunc(open, func(l *bus.Lease) bool { return l == leader })
	}
}
