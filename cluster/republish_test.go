package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/records"
	"github.com/patrold/patrold/store/storetest"
)

// gatedApply is a store that refuses every change numbered above above
// (0: none refused), as a full disk does: the follower retries it with
// a new consumer, reading the stream again from the applied sequence.
type gatedApply struct {
	*store.Store
	above atomic.Uint64
}

func (g *gatedApply) ApplyState(ctx context.Context, seq uint64, self string, c contracts.StateChange, now time.Time) (records.Apply, error) {
	if a := g.above.Load(); a != 0 && c.N > a {
		return records.ApplySkipped, fmt.Errorf("apply state seq %d: database or disk is full", seq)
	}
	return g.Store.ApplyState(ctx, seq, self, c, now)
}

// streamChange is a state change on the stream, at its sequence, under
// its message id.
type streamChange struct {
	seq uint64
	id  string
	c   contracts.StateChange
	// republished is the message's HeaderRepublished.
	republished string
}

// streamChanges reads every state change n's stream holds, in order.
func streamChanges(t *testing.T, n *node) []streamChange {
	t.Helper()
	ctx := context.Background()
	s, info := streamOf(t, n)
	var out []streamChange
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject != contracts.FullSubject(n.b.Prefix(), contracts.SubjectStateChanges) {
			continue
		}
		c, err := cluster.Decode(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, streamChange{seq: seq, id: m.Header.Get(jetstream.MsgIDHeader), c: c, republished: m.Header.Get(contracts.HeaderRepublished)})
	}
	return out
}

// numbered is the stream's entries of change number n.
func numbered(cs []streamChange, n uint64) []streamChange {
	var out []streamChange
	for _, c := range cs {
		if c.c.N == n {
			out = append(out, c)
		}
	}
	return out
}

// resendFixture: writer a (a cluster member holding lease term 5, its
// relay re-publishing) and standby b, each on a store that can refuse
// changes (a gate).
type resendFixture struct {
	a, b           *node
	lease          *switchLease
	lead           *cluster.Leadership
	ma, mb         *cluster.Member
	aGate, bGate   *gatedApply
	aLogs, bLogs   *testkit.LogBuffer
	relayLogs      *testkit.LogBuffer
	relayReg, bReg *prometheus.Registry
	now            time.Time
}

func newResendFixture(t *testing.T, holdFor time.Duration) *resendFixture {
	t.Helper()
	nodes := newNodes(t, "a", "b")
	x := &resendFixture{a: nodes[0], b: nodes[1], lease: &switchLease{}, lead: cluster.NewLeadership(true, time.Now),
		relayLogs: &testkit.LogBuffer{}, relayReg: prometheus.NewRegistry(), bReg: prometheus.NewRegistry(),
		now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	a, b := x.a, x.b
	rel, err := bus.NewRelay(bus.RelayOptions{Outbox: a.st, JetStream: a.b.JetStream(), Prefix: a.b.Prefix(), Interval: 20 * time.Millisecond,
		Guard: a.b.Guard(), Registerer: x.relayReg, Logger: slog.New(slog.NewJSONHandler(x.relayLogs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	a.rel = rel
	x.aGate, x.bGate = &gatedApply{Store: a.st}, &gatedApply{Store: b.st}
	x.lease.term.Store(5)
	x.lease.leader.Store(true)
	x.ma, x.aLogs = startMember(t, cluster.Options{Bus: a.b, Lease: x.lease, Leadership: x.lead, Store: x.aGate, Instance: "a",
		DataDir: t.TempDir(), Replicas: 1, Kick: a.rel.Kick, Resend: a.rel.Resend, HoldFor: holdFor})
	run(t, a.rel.Run)
	testkit.Eventually(t, 10*time.Second, "a is the writer", x.lead.IsWriter)
	x.mb, x.bLogs = startMember(t, cluster.Options{Bus: b.b, Lease: standbyLease{}, Leadership: cluster.NewLeadership(true, time.Now),
		Store: x.bGate, Instance: "b", DataDir: t.TempDir(), Replicas: 1, Kick: b.rel.Kick, Registerer: x.bReg, HoldFor: holdFor})
	commitRun(t, a.st, x.now, obs("vm-1", "cpu"), obs("vm-2", "disk"))
	a.rel.Kick()
	x.caughtUp(t)
	return x
}

// caughtUp waits until a published everything and both members applied
// the stream's last change, holding nothing, with no gap.
func (x *resendFixture) caughtUp(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, m := range []*cluster.Member{x.ma, x.mb} {
		testkit.EventuallyState(t, 20*time.Second, m.Instance()+" caught up", func() (bool, string) {
			n, err := x.a.st.UnsentState(ctx)
			l := m.Lag(ctx)
			if err != nil || l == nil {
				return false, fmt.Sprint(err)
			}
			return n == 0 && l.LastSeq > 0 && !l.Behind && l.Gap == "" && l.WaitingFor == 0, fmt.Sprintf("unsent %d, lag %+v", n, *l)
		})
	}
}

// loseOne closes both gates, has a acknowledge both findings (changes
// n-1, n, n+1 and more), waits until the stream acknowledged them all,
// then deletes change n from the stream by sequence. It returns n and
// the message id n had.
func (x *resendFixture) loseOne(t *testing.T) (uint64, string) {
	t.Helper()
	ctx := context.Background()
	var last uint64
	for _, c := range streamChanges(t, x.a) {
		last = max(last, c.c.N)
	}
	x.aGate.above.Store(last)
	x.bGate.above.Store(last)
	fs, err := x.a.st.List(ctx, findings.ListFilter{})
	if err != nil || len(fs) != 2 {
		t.Fatalf("writer findings: %d, %v", len(fs), err)
	}
	for i, f := range fs {
		if _, err := x.a.st.Act(ctx, f.ID, findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "op"}, x.now.Add(time.Duration(i+1)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	x.a.rel.Kick()
	testkit.Eventually(t, 10*time.Second, "the stream acknowledged every change", func() bool {
		n, err := x.a.st.UnsentState(ctx)
		return err == nil && n == 0
	})
	n := last + 2
	cs := streamChanges(t, x.a)
	lost := numbered(cs, n)
	if len(lost) != 1 || len(numbered(cs, n+1)) != 1 {
		t.Fatalf("stream: change %d %d times, %d after it", n, len(lost), len(numbered(cs, n+1)))
	}
	s, err := x.a.b.JetStream().Stream(ctx, x.a.b.StreamName())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, lost[0].seq); err != nil {
		t.Fatal(err)
	}
	return n, lost[0].id
}

// TestWriterRepublishesALostChange: the stream acknowledged the
// writer's change n, then lost it (here deleted by sequence; in the
// partition test a stream leader acknowledged it and lost its term),
// while n+1 and later are on it. The writer's own follower meets n+1
// first and the writer publishes n again from its outbox, signed, under
// a fresh message id; every follower holding n+1 applies n and then
// the rest. No gap, no re-seed, and the standby's rows end equal to
// the writer's.
func TestWriterRepublishesALostChange(t *testing.T) {
	ctx := context.Background()
	x := newResendFixture(t, 20*time.Second)
	n, lostID := x.loseOne(t)
	x.aGate.above.Store(0)
	x.bGate.above.Store(0)
	x.caughtUp(t)

	again := numbered(streamChanges(t, x.a), n)
	if len(again) != 1 || !regexp.MustCompile(`^`+regexp.QuoteMeta(lostID)+`-re-[0-9a-f]{16}$`).MatchString(again[0].id) {
		t.Fatalf("change %d on the stream: %+v, want it once, published again under %s-re-<16 hex>", n, again, lostID)
	}
	if again[0].republished != fmt.Sprint(n) {
		t.Errorf("%s: %q, want %d", contracts.HeaderRepublished, again[0].republished, n)
	}
	if got := strings.Count(x.relayLogs.String(), `"msg":"state change missing from the stream: published again from the outbox"`); got != 1 {
		t.Errorf("re-publish logged %d times, want 1:\n%s", got, x.relayLogs.String())
	}
	for name, want := range map[string]float64{"patrold_replica_gaps_total": 0, "patrold_replica_reseeds_total": 0, "patrold_replica_duplicates_total": 0} {
		if got := metricValue(t, x.bReg, name); got != want {
			t.Errorf("b: %s = %v, want %v", name, got, want)
		}
	}
	if got := metricValue(t, x.relayReg, "patrold_outbox_republished_total"); got != 1 {
		t.Errorf("patrold_outbox_republished_total = %v, want 1", got)
	}
	if !strings.Contains(x.bLogs.String(), "state change read ahead of an earlier one: waiting for it") {
		t.Errorf("b never held a change behind the lost one:\n%s", x.bLogs.String())
	}
	if x.mb.Lag(ctx).Fenced != 0 {
		t.Errorf("b fenced %d changes, want 0", x.mb.Lag(ctx).Fenced)
	}
	storetest.SameDB(t, "b after the lost change came again", replicated(storetest.DumpDB(t, x.b.st.Path())), replicated(storetest.DumpDB(t, x.a.st.Path())))
}

// TestRepublishedChangeAppliesOnce: the writer publishes a change again
// that was not lost after all (the stream stored it late), so the
// stream holds its number twice. Applied twice, the older row image
// would undo the acknowledgement since; every replica skips it as a
// number applied before, counts it, and ends equal to the writer.
func TestRepublishedChangeAppliesOnce(t *testing.T) {
	ctx := context.Background()
	x := newResendFixture(t, 20*time.Second)
	fs, err := x.a.st.List(ctx, findings.ListFilter{})
	if err != nil || len(fs) != 2 {
		t.Fatalf("writer findings: %d, %v", len(fs), err)
	}
	before := streamChanges(t, x.a)
	if _, err := x.a.st.Act(ctx, fs[0].ID, findings.ActionRequest{Action: findings.ActionSnooze, Actor: "op", For: 48 * time.Hour}, x.now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	x.a.rel.Kick()
	x.caughtUp(t)
	var snoozed uint64 // the finding's row as snoozed, before the acknowledgement below
	for _, c := range streamChanges(t, x.a)[len(before):] {
		if c.c.Table == "findings" && c.c.Op == contracts.OpUpsert && strings.Contains(string(c.c.Row["id"]), fs[0].ID) {
			snoozed = c.c.N
		}
	}
	if snoozed == 0 {
		t.Fatal("no upsert of the snoozed finding on the stream")
	}
	if _, err := x.a.st.Act(ctx, fs[0].ID, findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "op"}, x.now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	x.a.rel.Kick()
	x.caughtUp(t)

	x.a.rel.Resend(snoozed)
	testkit.Eventually(t, 10*time.Second, "the change published again", func() bool {
		return metricValue(t, x.relayReg, "patrold_outbox_republished_total") == 1
	})
	x.caughtUp(t)
	if got := len(numbered(streamChanges(t, x.a), snoozed)); got != 2 {
		t.Fatalf("change %d on the stream %d times, want 2", snoozed, got)
	}
	for name, want := range map[string]float64{"patrold_replica_gaps_total": 0, "patrold_replica_reseeds_total": 0, "patrold_replica_duplicates_total": 1} {
		if got := metricValue(t, x.bReg, name); got != want {
			t.Errorf("b: %s = %v, want %v", name, got, want)
		}
	}
	for _, m := range []*cluster.Member{x.ma, x.mb} {
		if l := m.Lag(ctx); l.Gap != "" || l.Diverged != "" {
			t.Errorf("%s: lag %+v", m.Instance(), *l)
		}
	}
	f, err := x.b.st.Get(ctx, fs[0].ID)
	if err != nil || f.AcknowledgedAt == nil {
		t.Fatalf("b's finding after the duplicate: %+v, %v", f, err)
	}
	storetest.SameDB(t, "b after a duplicate", replicated(storetest.DumpDB(t, x.b.st.Path())), replicated(storetest.DumpDB(t, x.a.st.Path())))
}

// TestDeposedWriterNeverRepublishes is the attack on the re-publish: a
// writer that lost its lease finds its own change missing from the
// stream. It publishes nothing again: a deposed writer's change would
// land after its successor's epoch marker. The change stays missing, a
// gap for the standby. No other instance has it, so the deposed writer
// applies its own record of it (it holds the rows) and the standby
// re-seeds from it: before, both waited for good.
func TestDeposedWriterNeverRepublishes(t *testing.T) {
	ctx := context.Background()
	x := newResendFixture(t, 2*time.Second)
	n, _ := x.loseOne(t)
	x.lease.leader.Store(false)
	testkit.Eventually(t, 10*time.Second, "a stopped writing", func() bool {
		return !x.lead.IsWriter() && strings.Contains(x.aLogs.String(), "standby: leader lease lost")
	})
	x.aGate.above.Store(0)
	x.bGate.above.Store(0)
	testkit.EventuallyState(t, 20*time.Second, "a asked, and the relay refused", func() (bool, string) {
		refused := regexp.MustCompile(`"msg":"state change not re-published: this instance is not writing, or the change is not of its epoch".*"n":` + fmt.Sprint(n) + `}`)
		return refused.MatchString(x.relayLogs.String()), x.relayLogs.String()
	})
	testkit.Eventually(t, 20*time.Second, "b found the gap", func() bool { return metricValue(t, x.bReg, "patrold_replica_gaps_total") == 1 })
	if got := numbered(streamChanges(t, x.a), n); len(got) != 0 {
		t.Fatalf("change %d published again by a deposed writer: %+v", n, got)
	}
	if got := metricValue(t, x.relayReg, "patrold_outbox_republished_total"); got != 0 {
		t.Errorf("patrold_outbox_republished_total = %v, want 0", got)
	}
	if !strings.Contains(x.bLogs.String(), fmt.Sprintf("state changes %d..%d are missing", n, n)) {
		t.Errorf("b's log does not name the gap at %d:\n%s", n, x.bLogs.String())
	}

	// a holds the change's rows: it applies its own record and reads on,
	// and b re-seeds from it. Before, both waited for good.
	testkit.EventuallyState(t, 30*time.Second, "b re-seeded from a", func() (bool, string) {
		l := x.mb.Lag(ctx)
		return l != nil && l.Gap == "" && !l.Behind && strings.Contains(x.bLogs.String(), "database with a gap re-seeded"), fmt.Sprintf("%+v", l)
	})
	if !strings.Contains(x.aLogs.String(), "applied from its own record") {
		t.Errorf("a never applied its own record of change %d:\n%s", n, x.aLogs.String())
	}
	storetest.SameDB(t, "b after re-seeding from the deposed writer", replicated(storetest.DumpDB(t, x.b.st.Path())),
		replicated(storetest.DumpDB(t, x.a.st.Path())))
}
