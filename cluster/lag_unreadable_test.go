package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
)

// leaderlessBus is a node's bus whose streams have no leader.
type leaderlessBus struct{ *bus.Bus }

func (b leaderlessBus) JetStream() jetstream.JetStream { return leaderless{b.Bus.JetStream()} }

// TestLagKeepsLocalFactsWhileTheStreamIsUnreadable: the partition test
// read a standby that was still behind as caught up. Its stream lookup
// failed, so its lag (status, readiness) was every field zero, "applied
// 0 of 0": equal to a writer's failed one, and hiding a gap or an apply
// error. While the stream cannot be read, the lag keeps the database's
// own position and problems, says why the last sequence is unknown and
// counts the replica as behind.
func TestLagKeepsLocalFactsWhileTheStreamIsUnreadable(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	replicate(t, 1, a)
	disk := &fullDisk{Store: b.st}
	m, err := cluster.New(cluster.Options{Bus: leaderlessBus{b.b}, Lease: standbyLease{}, Leadership: cluster.NewLeadership(true, time.Now),
		Store: disk, Instance: "b", DataDir: t.TempDir(), Replicas: 1, Kick: b.rel.Kick})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop(context.Background()) })
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commitRun(t, a.st, now, obs("vm-1", "cpu"))
	a.rel.Kick()
	caughtUp(t, a, a.f)
	want, err := a.st.ReplicaStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "b applied what a published", func() bool {
		st, err := b.st.ReplicaStatus(ctx)
		return err == nil && st.AppliedSeq == want.AppliedSeq
	})
	disk.full.Store(true)
	fs, _ := a.st.List(ctx, findings.ListFilter{})
	if _, err := a.st.Act(ctx, fs[0].ID, findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "op"}, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	a.rel.Kick()
	testkit.EventuallyState(t, 10*time.Second, "b's lag while its stream has no leader", func() (bool, string) {
		lctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		l := m.Lag(lctx)
		if l == nil {
			return false, "no lag"
		}
		got := *l
		got.AppliedAt, got.Dropped = nil, 0
		wantLag := cluster.Lag{AppliedSeq: want.AppliedSeq, Behind: true, Epoch: 1, ApplyError: got.ApplyError,
			StreamError: "state stream: context deadline exceeded"}
		return got == wantLag && strings.HasSuffix(got.ApplyError, ": database or disk is full"), fmt.Sprintf("%+v", got)
	})
}
