package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/internal/testkit"
)

// TestLostStreamIsLoud: the patrol stream disappears (its JetStream
// store lost, or deleted). Every instance says so (StreamGone, readiness
// stream_lost), logs one ERROR and counts it once; nothing is applied
// meanwhile. When the stream is there again each says it once more
// (INFO) and StreamGone clears. The attack before this: every instance
// stayed ready with no ERROR (docs/CLUSTER.md, "A lost patrol stream").
func TestLostStreamIsLoud(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	lease, lead := heldLease()
	regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry()}
	const stall = 400 * time.Millisecond
	ma, aLogs := startMember(t, cluster.Options{Bus: a.b, Lease: lease, Leadership: lead, Store: a.st, Instance: "a",
		DataDir: t.TempDir(), Replicas: 1, Kick: a.rel.Kick, Registerer: regs[0], StallAfter: stall})
	run(t, a.rel.Run)
	testkit.Eventually(t, 10*time.Second, "a is the writer", lead.IsWriter)
	mb, bLogs := startMember(t, cluster.Options{Bus: b.b, Lease: standbyLease{}, Leadership: cluster.NewLeadership(true, time.Now),
		Store: b.st, Instance: "b", DataDir: t.TempDir(), Replicas: 1, Kick: b.rel.Kick, Registerer: regs[1], StallAfter: stall})
	members, logs := []*cluster.Member{ma, mb}, []*testkit.LogBuffer{aLogs, bLogs}
	for _, m := range members {
		if err := m.StreamGone(); err != nil {
			t.Fatalf("%s before the loss: %v", m.Instance(), err)
		}
	}

	js := a.b.JetStream()
	s, err := js.Stream(ctx, a.b.StreamName())
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	if err := js.DeleteStream(ctx, cfg.Name); err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		testkit.EventuallyState(t, 10*time.Second, m.Instance()+" says the stream is gone", func() (bool, string) {
			err := m.StreamGone()
			return errors.Is(err, jetstream.ErrStreamNotFound), fmt.Sprint(err)
		})
	}

	// Created again (a restarting patrold serve would): found again.
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	for i, m := range members {
		testkit.EventuallyState(t, 10*time.Second, m.Instance()+" finds the stream again", func() (bool, string) {
			err := m.StreamGone()
			return err == nil, fmt.Sprint(err)
		})
		// The loss lasted at least until both noticed: many ticks, and
		// still one ERROR and one count.
		if got := metricValue(t, regs[i], "patrold_replica_stream_lost_total"); got != 1 {
			t.Errorf("%s: patrold_replica_stream_lost_total = %v, want 1", m.Instance(), got)
		}
		for _, want := range []string{`"level":"ERROR","msg":"state stream is gone`, `"level":"INFO","msg":"state stream found again`} {
			if n := strings.Count(logs[i].String(), want); n != 1 {
				t.Errorf("%s logged %s %d times, want once", m.Instance(), want, n)
			}
		}
	}
}
