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
	"github.com/patrold/patrold/store/storetest"
)

// TestLostStreamIsCreatedAgain: the patrol stream disappears (its
// JetStream store lost, or deleted). Every running instance says so
// (StreamGone, readiness stream_lost), logs one ERROR and counts it
// once. The lease holder then creates it again; every replica reads the
// new stream from its start, and what the writer commits next reaches
// each of them, also one stopped through the loss that starts again
// later (its database knows which stream it read). The attack before
// this: every instance stayed ready with no ERROR, then the stream stayed
// lost for good (docs/CLUSTER.md, "A lost patrol stream").
func TestLostStreamIsCreatedAgain(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b", "c")
	a, b, c := nodes[0], nodes[1], nodes[2]
	lease, lead := heldLease()
	regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry()}
	const stall = 400 * time.Millisecond
	ma, aLogs := startMember(t, cluster.Options{Bus: a.b, Lease: lease, Leadership: lead, Store: a.st, Instance: "a",
		DataDir: t.TempDir(), Replicas: 1, Kick: a.rel.Kick, Resend: a.rel.Resend, Registerer: regs[0], StallAfter: stall})
	run(t, a.rel.Run)
	testkit.Eventually(t, 10*time.Second, "a is the writer", lead.IsWriter)
	standby := func(n *node, reg prometheus.Registerer) (*cluster.Member, *testkit.LogBuffer) {
		return startMember(t, cluster.Options{Bus: n.b, Lease: standbyLease{}, Leadership: cluster.NewLeadership(true, time.Now),
			Store: n.st, Instance: n.name, DataDir: t.TempDir(), Replicas: 1, Kick: n.rel.Kick, Registerer: reg, StallAfter: stall})
	}
	mb, bLogs := standby(b, regs[1])
	mc, _ := standby(c, nil)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commitRun(t, a.st, now, obs("vm-1", "cpu"))
	a.rel.Kick()
	members, logs := []*cluster.Member{ma, mb}, []*testkit.LogBuffer{aLogs, bLogs}
	caughtUpWith(t, a, ma, mb, mc)

	// c stops; the stream is deleted.
	if err := mc.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	js := a.b.JetStream()
	if err := js.DeleteStream(ctx, a.b.StreamName()); err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		testkit.EventuallyState(t, 10*time.Second, m.Instance()+" says the stream is gone", func() (bool, string) {
			err := m.StreamGone()
			return errors.Is(err, jetstream.ErrStreamNotFound), fmt.Sprint(err)
		})
	}

	// The lease holder creates it again; each instance reads it from its
	// start.
	for i, m := range members {
		testkit.EventuallyState(t, 10*time.Second, m.Instance()+" reads the stream created again", func() (bool, string) {
			err := m.StreamGone()
			return err == nil && strings.Contains(logs[i].String(), `"level":"ERROR","msg":"state stream created again`), fmt.Sprint(err)
		})
		// Many ticks while it was gone: still one ERROR and one count.
		if got := metricValue(t, regs[i], "patrold_replica_stream_lost_total"); got != 1 {
			t.Errorf("%s: patrold_replica_stream_lost_total = %v, want 1", m.Instance(), got)
		}
		for _, want := range []string{`"level":"ERROR","msg":"state stream is gone`, `"level":"INFO","msg":"state stream found again`} {
			if n := strings.Count(logs[i].String(), want); n != 1 {
				t.Errorf("%s logged %s %d times, want once", m.Instance(), want, n)
			}
		}
	}
	// Once, or again when a loaded machine found it late.
	if n := strings.Count(aLogs.String(), `"msg":"creating the lost state stream again`); n == 0 {
		t.Errorf("a never created the stream again")
	}

	// What the writer commits now reaches b, and c once it starts again.
	commitRun(t, a.st, now.Add(time.Hour), obs("vm-1", "cpu"), obs("vm-2", "disk"))
	a.rel.Kick()
	mc, _ = standby(c, nil)
	caughtUpWith(t, a, ma, mb, mc)
	for _, n := range []*node{b, c} {
		storetest.SameDB(t, n.name+" after the stream was created again", replicated(storetest.DumpDB(t, n.st.Path())),
			replicated(storetest.DumpDB(t, a.st.Path())))
	}
}

// caughtUpWith waits until writer published every change and each
// member applied the stream's last.
func caughtUpWith(t *testing.T, writer *node, ms ...*cluster.Member) {
	t.Helper()
	ctx := context.Background()
	testkit.Eventually(t, 10*time.Second, "the writer published every change", func() bool {
		n, err := writer.st.UnsentState(ctx)
		return err == nil && n == 0
	})
	for _, m := range ms {
		testkit.EventuallyState(t, 10*time.Second, m.Instance()+" caught up", func() (bool, string) {
			l := m.Lag(ctx)
			return l != nil && l.LastSeq > 0 && !l.Behind && l.Gap == "", fmt.Sprintf("%+v", l)
		})
	}
}
