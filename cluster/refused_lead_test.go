package cluster_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/internal/testkit"
)

// TestStandbyRefusingAPeerNeverLeads: a rolling upgrade. A writer of
// the previous build publishes unsigned changes; this build's standby
// refuses them, so its database lacks them. The probe saw such a
// standby report ready, then take the lease and write on its stale
// database (157 answered actions lost). Its lag now names the refusal
// (readiness: replica_refused) and, holding the lease, it releases it
// instead of writing. Once a change numbered in turn applies, nothing
// refused was a change, and it may lead.
func TestStandbyRefusingAPeerNeverLeads(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	replicate(t, 1, a)
	run(t, b.rel.Run)
	lease := &switchLease{}
	lease.term.Store(5)
	lead := cluster.NewLeadership(true, time.Now)
	m, logs := startMember(t, cluster.Options{Bus: b.b, Lease: lease, Leadership: lead, Store: b.st, Instance: "b", DataDir: t.TempDir(),
		Replicas: 1, Kick: b.rel.Kick})
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commitRun(t, a.st, now, obs("vm-1", "cpu"))
	a.rel.Kick()
	caughtUp(t, a, a.f)

	// The previous build's writer: its next change, unsigned.
	s, err := a.b.JetStream().Stream(ctx, a.b.StreamName())
	if err != nil {
		t.Fatal(err)
	}
	last, err := s.GetLastMsgForSubject(ctx, a.f.FullSubject())
	if err != nil {
		t.Fatal(err)
	}
	ev, err := contracts.DecodeEvent(last.Data)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Decode(last.Data)
	if err != nil {
		t.Fatal(err)
	}
	c.N++
	old := nats.NewMsg(a.f.FullSubject())
	old.Header.Set(jetstream.MsgIDHeader, "previous-build-1")
	old.Header.Set(bus.HeaderContentType, contracts.ContentTypeEvent)
	old.Data = stateEvent(t, ev, c)
	ack, err := a.b.JetStream().PublishMsg(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "b read the unsigned change", func() bool {
		st, err := b.st.ReplicaStatus(ctx)
		return err == nil && st.AppliedSeq == ack.Sequence
	})
	want := "state change at seq " + itoa(ack.Sequence) + " refused (a peer of another build or key?): message refused: unsigned"
	if l := m.Lag(ctx); l == nil || l.Refused != want {
		t.Fatalf("b's lag %+v, want refused %q", l, want)
	}

	lease.leader.Store(true)
	testkit.Eventually(t, 10*time.Second, "b releases the lease", func() bool {
		return strings.Contains(logs.String(), "leader lease held, but this database must be re-seeded first") && !lease.leader.Load()
	})
	if lead.IsWriter() {
		t.Fatal("b writes on a database that lacks the change it refused")
	}

	// The writer's next change, numbered in turn, applies on b.
	commitRun(t, a.st, now.Add(time.Hour), obs("vm-1", "cpu"), obs("vm-2", "disk"))
	a.rel.Kick()
	testkit.Eventually(t, 10*time.Second, "b applied a numbered change in turn", func() bool {
		l := m.Lag(ctx)
		return l != nil && l.Refused == "" && l.AppliedSeq > ack.Sequence
	})
	lease.leader.Store(true)
	testkit.Eventually(t, 10*time.Second, "b may lead again", lead.IsWriter)
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
