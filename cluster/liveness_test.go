package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/records"
)

// TestStandbyResubscribesWhenItsNodeDies: a standby follows the writer
// over a three-node JetStream cluster (R3 stream). The server the standby
// is connected to shuts down. The standby applies the writer's next
// change within its stall bound (it re-subscribes through a surviving
// server), not when that server comes back.
func TestStandbyResubscribesWhenItsNodeDies(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	ctx := context.Background()
	srvs := natstest.ClusterServers(t, 3)
	urls := make([]string, len(srvs))
	for i, s := range srvs {
		urls[i] = s.ClientURL()
	}
	// The writer stays on nats-1; the standby is on nats-2 or nats-3,
	// whichever it dialled, and the other is its way back.
	o := bus.DefaultOptions()
	o.URL = urls[0]
	o.Stream.Replicas = 3
	a := newGuardedNode(t, o, "a", testGuard(t, nil, nil), nil)
	o.URL = strings.Join(urls[1:], ",")
	b := newGuardedNode(t, o, "b", testGuard(t, nil, nil), nil)
	b.f = stallBound(t, b, stall)
	replicate(t, 1, a, b)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the standby's follower:\n%s", b.log.String())
		}
	})
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commitRun(t, a.st, now, obs("vm-1", "cpu"), obs("vm-2", "disk"))
	a.rel.Kick()
	caughtUp(t, a, b.f)

	connected := b.b.Conn().ConnectedUrl()
	dead := ""
	for _, s := range srvs {
		if s.ClientURL() == connected {
			dead = s.Name()
			s.Shutdown()
			s.WaitForShutdown()
		}
	}
	shutAt := time.Now()
	// The writer publishes once the stream has a leader again: a window
	// of publishes cut in half by the election is the relay's concern,
	// not the standby's.
	testkit.Eventually(t, 30*time.Second, "the stream has a leader among the survivors", func() bool {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		s, err := a.b.JetStream().Stream(sctx, a.b.StreamName())
		if err != nil {
			return false
		}
		info, err := s.Info(sctx)
		return err == nil && info.Cluster != nil && info.Cluster.Leader != "" && info.Cluster.Leader != dead
	})
	fs, err := a.st.List(ctx, findings.ListFilter{})
	if err != nil || len(fs) != 2 {
		t.Fatalf("a's findings: %d %v", len(fs), err)
	}
	if _, err := a.st.Act(ctx, fs[0].ID, findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "op"}, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	a.rel.Kick()
	testkit.Eventually(t, 30*time.Second, "the writer published the acknowledgement", func() bool {
		n, err := a.st.UnsentState(ctx)
		return err == nil && n == 0
	})
	published := time.Now()
	// The bound, and the consumer's creation through a cluster that just
	// lost a server, under load.
	testkit.Eventually(t, stall+20*time.Second, "the standby applies the acknowledgement", func() bool {
		f, err := b.st.Get(ctx, fs[0].ID)
		return err == nil && f.AcknowledgedAt != nil
	})
	t.Logf("applied %s after its server shut down, %s after the publish", time.Since(shutAt), time.Since(published))
}

// stall is the tests' stall bound.
const stall = time.Second

// stallBound rebuilds n's follower with the stall bound d.
func stallBound(t *testing.T, n *node, d time.Duration) *cluster.Follower {
	t.Helper()
	f, err := cluster.NewFollower(cluster.FollowerOptions{JetStream: n.b.JetStream(), Stream: n.b.StreamName(), Prefix: n.b.Prefix(), Store: n.st,
		Instance: n.name, Guard: n.b.Guard(), StallAfter: d, Logger: slog.New(slog.NewTextHandler(&n.log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestStalledConsumerIsReplaced: the standby's consumer stops delivering
// while its server and its heartbeats stay up (paused on the server), and
// the writer publishes more. Within the stall bound the standby logs the
// stall once, re-subscribes and applies the change.
func TestStalledConsumerIsReplaced(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	b.f = stallBound(t, b, stall)
	replicate(t, 1, a, b)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commitRun(t, a.st, now, obs("vm-1", "cpu"))
	a.rel.Kick()
	caughtUp(t, a, b.f)

	js := b.b.JetStream()
	s, err := js.Stream(ctx, b.b.StreamName())
	if err != nil {
		t.Fatal(err)
	}
	names := s.ConsumerNames(ctx)
	var paused []string
	for name := range names.Name() {
		if _, err := js.PauseConsumer(ctx, b.b.StreamName(), name, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		paused = append(paused, name)
	}
	if names.Err() != nil || len(paused) == 0 {
		t.Fatalf("consumers %v: %v", paused, names.Err())
	}
	fs, _ := a.st.List(ctx, findings.ListFilter{})
	if _, err := a.st.Act(ctx, fs[0].ID, findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "op"}, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	a.rel.Kick()
	testkit.Eventually(t, stall+20*time.Second, "the standby applies the acknowledgement", func() bool {
		f, err := b.st.Get(ctx, fs[0].ID)
		return err == nil && f.AcknowledgedAt != nil
	})
	if n := strings.Count(b.log.String(), "state stream stalled"); n != 1 || b.f.Resubscribes() == 0 {
		t.Fatalf("stall logged %d times, %d re-subscribes; want once and some:\n%s", n, b.f.Resubscribes(), b.log.String())
	}
}

// fullDisk is a store whose applies fail while full is set, as SQLite's
// do on a full disk.
type fullDisk struct {
	*store.Store
	full atomic.Bool
}

func (d *fullDisk) ApplyState(ctx context.Context, seq uint64, self string, c contracts.StateChange, now time.Time) (records.Apply, error) {
	if d.full.Load() {
		return records.ApplySkipped, fmt.Errorf("apply state seq %d: database or disk is full", seq)
	}
	return d.Store.ApplyState(ctx, seq, self, c, now)
}

// TestReplicaThatCannotApplySaysSo: while the standby's disk is full its
// lag carries the error (status and readiness show it); once there is
// room it applies the change and the error is gone.
func TestReplicaThatCannotApplySaysSo(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	disk := &fullDisk{Store: b.st}
	f, err := cluster.NewFollower(cluster.FollowerOptions{JetStream: b.b.JetStream(), Stream: b.b.StreamName(), Prefix: b.b.Prefix(), Store: disk,
		Instance: "b", Guard: b.b.Guard()})
	if err != nil {
		t.Fatal(err)
	}
	b.f = f
	replicate(t, 1, a, b)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commitRun(t, a.st, now, obs("vm-1", "cpu"))
	a.rel.Kick()
	caughtUp(t, a, b.f)

	disk.full.Store(true)
	fs, _ := a.st.List(ctx, findings.ListFilter{})
	if _, err := a.st.Act(ctx, fs[0].ID, findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "op"}, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	a.rel.Kick()
	var lag cluster.Lag
	testkit.EventuallyState(t, 10*time.Second, "the standby reports it cannot apply", func() (bool, string) {
		lag, _ = b.f.Lag(ctx)
		return strings.HasSuffix(lag.ApplyError, ": database or disk is full") && lag.Behind, fmt.Sprintf("%+v", lag)
	})
	disk.full.Store(false)
	testkit.EventuallyState(t, 20*time.Second, "the standby applies once there is room", func() (bool, string) {
		lag, _ = b.f.Lag(ctx)
		return lag.ApplyError == "" && !lag.Behind, fmt.Sprintf("%+v", lag)
	})
	if f, err := b.st.Get(ctx, fs[0].ID); err != nil || f.AcknowledgedAt == nil {
		t.Fatalf("the acknowledgement on the standby: %+v %v", f, err)
	}
}

// slowFirstConsumer is a JetStream whose first ordered consumer takes
// delay to come up, as on a loaded server.
type slowFirstConsumer struct {
	jetstream.JetStream
	delay time.Duration
	calls atomic.Int32
}

func (s *slowFirstConsumer) OrderedConsumer(ctx context.Context, stream string, cfg jetstream.OrderedConsumerConfig) (jetstream.Consumer, error) {
	if s.calls.Add(1) == 1 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(s.delay):
		}
	}
	return s.JetStream.OrderedConsumer(ctx, stream, cfg)
}

// TestSlowFirstConsumerIsNoStall: a new standby, behind from its start,
// whose first consumer takes twice the stall bound to come up, is not
// stalled: nothing could be applied before it was subscribed. It logs no
// stall, never re-subscribes (which would cancel the consumer coming up)
// and catches up on that first consumer.
func TestSlowFirstConsumerIsNoStall(t *testing.T) {
	nodes := newNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	replicate(t, 1, a)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commitRun(t, a.st, now, obs("vm-1", "cpu"), obs("vm-2", "disk"))
	a.rel.Kick()
	caughtUp(t, a, a.f)

	js := &slowFirstConsumer{JetStream: b.b.JetStream(), delay: 2 * stall}
	f, err := cluster.NewFollower(cluster.FollowerOptions{JetStream: js, Stream: b.b.StreamName(), Prefix: b.b.Prefix(), Store: b.st,
		Instance: b.name, Guard: b.b.Guard(), StallAfter: stall, Logger: slog.New(slog.NewTextHandler(&b.log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	run(t, f.Run)
	caughtUp(t, a, f)
	if n := strings.Count(b.log.String(), "state stream stalled"); n != 0 || f.Resubscribes() != 0 || js.calls.Load() != 1 {
		t.Fatalf("stall logged %d times, %d re-subscribes, %d consumers; want none, none and one:\n%s",
			n, f.Resubscribes(), js.calls.Load(), b.log.String())
	}
}
