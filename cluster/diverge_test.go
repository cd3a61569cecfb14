package cluster_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/store/records"
	"github.com/patrold/patrold/store/storetest"
)

// standbyLease is a lease this instance never holds.
type standbyLease struct{}

func (standbyLease) IsLeader() bool { return false }
func (standbyLease) Term() uint64   { return 0 }
func (standbyLease) Close() error   { return nil }

// replicated keeps the tables every replica holds alike: the outbox, the
// replica's own position and counters, usage history and the schema's
// version are each instance's own.
func replicated(db storetest.DB) storetest.DB {
	for _, t := range []string{"outbox", "outbox_sent", "replica_state", "findings_version", "usage_points", "goose_db_version"} {
		delete(db, t)
	}
	return db
}

// reseedWithin bounds a re-seed that a test waits for: the attempts made
// before a copy is served fail, and back off to 30 s between attempts
// (seedself.go); under load the copy may be served just after one.
const reseedWithin = 50 * time.Second

// TestRestartedWriterReseedsItself: writer a commits an acknowledgement
// and a silence and dies before its relay publishes them; b takes over
// and writes. When a restarts, its outbox changes are stale: they are
// dropped (and named). Its own rows still hold them, so they are
// replaced by a caught-up instance's copy. Writer a ends with b's rows
// exactly and follows the stream on; b's rows never see a's stale
// changes.
func TestRestartedWriterReseedsItself(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	if err := a.f.EnableCapture(ctx, 1); err != nil {
		t.Fatal(err)
	}
	relayCtx, killRelay := context.WithCancel(ctx)
	relayDone := make(chan struct{})
	go func() { defer close(relayDone); _ = a.rel.Run(relayCtx) }()
	run(t, b.f.Run)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commitRun(t, a.st, now, obs("vm-1", "cpu"), obs("vm-2", "disk"), obs("vm-3", "mem"))
	a.rel.Kick()
	caughtUp(t, a, b.f)

	// a commits, then dies before publishing.
	killRelay()
	<-relayDone
	fs, err := a.st.List(ctx, findings.ListFilter{})
	if err != nil || len(fs) != 3 {
		t.Fatalf("a's findings: %d %v", len(fs), err)
	}
	if _, err := a.st.Act(ctx, fs[0].ID, findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "op"}, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	sil, err := a.st.AddSilence(ctx, findings.Silence{Matchers: findings.Matchers{Resource: "vm-2"}, Comment: "lost", Author: "op",
		StartsAt: now, EndsAt: now.Add(time.Hour)}, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	unsent, err := a.st.PendingCount(ctx)
	if err != nil || unsent == 0 {
		t.Fatalf("a's unsent events: %d %v", unsent, err)
	}

	// b takes over and writes.
	takeOver(t, b, 2)
	if _, err := b.st.Act(ctx, fs[1].ID, findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "op"}, now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	b.rel.Kick()
	caughtUp(t, b, b.f)
	run(t, func(ctx context.Context) error { return b.f.ServeSeeds(ctx, b.b.Conn(), t.TempDir(), 1, b.f.SeedReady) })
	bBefore := replicated(storetest.DumpDB(t, b.st.Path()))

	// a restarts on its database.
	reg := prometheus.NewRegistry()
	m, logs := startMember(t, cluster.Options{Bus: a.b, Lease: standbyLease{}, Leadership: cluster.NewLeadership(true, time.Now), Store: a.st,
		Instance: "a", DataDir: t.TempDir(), Replicas: 1, Kick: a.rel.Kick, Registerer: reg})
	run(t, a.rel.Run)
	testkit.Eventually(t, reseedWithin, "a re-seeded itself", func() bool {
		return m.Diverged() == nil && strings.Contains(logs.String(), `"msg":"diverged database re-seeded from a caught-up instance`)
	})

	// The stale changes were named and counted.
	log := logs.String()
	for _, want := range []string{`"msg":"unsent state changes dropped`, `"last_writer":"b"`,
		`{"kind":"findings upsert","id":"` + fs[0].ID + `"}`, `{"kind":"silences upsert","id":"` + sil.ID + `"}`} {
		if !strings.Contains(log, want) {
			t.Errorf("a's log lacks %s", want)
		}
	}
	if got := metricValue(t, reg, "patrold_replica_diverged_rows_total"); got != float64(unsent) {
		t.Errorf("patrold_replica_diverged_rows_total = %v, want %d", got, unsent)
	}
	if got := metricValue(t, reg, "patrold_replica_reseeds_total"); got != 1 {
		t.Errorf("patrold_replica_reseeds_total = %v, want 1", got)
	}
	// b never saw them; a now holds exactly b's rows.
	storetest.SameDB(t, "b after a's restart", replicated(storetest.DumpDB(t, b.st.Path())), bBefore)
	storetest.SameDB(t, "a after its re-seed", replicated(storetest.DumpDB(t, a.st.Path())), bBefore)
	if d, err := a.st.Divergence(ctx); err != nil || d.Diverged() {
		t.Fatalf("a's recorded divergence after the re-seed: %+v %v", d, err)
	}

	// a follows the stream on from the copy's position.
	if _, err := b.st.Act(ctx, fs[2].ID, findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "op"}, now.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	b.rel.Kick()
	testkit.Eventually(t, 10*time.Second, "a applies b's next change", func() bool {
		f, err := a.st.Get(ctx, fs[2].ID)
		return err == nil && f.AcknowledgedAt != nil
	})
	caughtUp(t, b, b.f)
	testkit.Eventually(t, 10*time.Second, "a caught up", func() bool {
		l := m.Lag(ctx)
		return l != nil && !l.Behind
	})
	storetest.SameDB(t, "a following b", replicated(storetest.DumpDB(t, a.st.Path())), replicated(storetest.DumpDB(t, b.st.Path())))
}

// metricValue is the value of the one series of the metric name in g.
func metricValue(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.Metric) == 1 {
			return mf.Metric[0].GetCounter().GetValue() + mf.Metric[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestResumedWriterReseedsItself: writer a is deposed while it runs (as
// after SIGSTOP and SIGCONT: b took over with a higher epoch) and writes
// on. Its own follower sees its change fenced: the database holds a
// change no other replica has. It is recorded as a divergence naming the
// change, the instance stops serving and re-seeds itself from a
// caught-up instance, then holds exactly b's rows and follows on.
//
// With the first read of the divergence failing (a busy database at the
// moment of the fence) the outcome is the same: the follower handles the
// fenced change on its next consumer, not only after a restart.
func TestResumedWriterReseedsItself(t *testing.T) {
	t.Run("read", func(t *testing.T) { resumedWriterReseedsItself(t, 0) })
	t.Run("read fails once", func(t *testing.T) { resumedWriterReseedsItself(t, 1) })
}

// failingDivergence is a Store whose next fail reads of the divergence
// fail.
type failingDivergence struct {
	cluster.Store
	fail atomic.Int32
}

func (s *failingDivergence) Divergence(ctx context.Context) (records.Divergence, error) {
	if s.fail.Add(-1) >= 0 {
		return records.Divergence{}, errors.New("injected: database is locked")
	}
	return s.Store.Divergence(ctx)
}

func resumedWriterReseedsItself(t *testing.T, failReads int32) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	reg := prometheus.NewRegistry()
	mst := &failingDivergence{Store: a.st}
	m, logs := startMember(t, cluster.Options{Bus: a.b, Lease: standbyLease{}, Leadership: cluster.NewLeadership(true, time.Now), Store: mst,
		Instance: "a", DataDir: t.TempDir(), Replicas: 1, Kick: a.rel.Kick, Registerer: reg,
		Now: func() time.Time { return now.Add(time.Hour) }})
	// a writes (capture on after Start, which starts a standby).
	if err := a.f.EnableCapture(ctx, 1); err != nil {
		t.Fatal(err)
	}
	run(t, a.rel.Run)
	run(t, b.f.Run)
	commitRun(t, a.st, now, obs("vm-1", "cpu"), obs("vm-2", "disk"))
	a.rel.Kick()
	caughtUp(t, a, b.f)

	// b takes over: its epoch marker is on the stream and applied by a.
	takeOver(t, b, 2)
	testkit.Eventually(t, 10*time.Second, "a applied b's epoch", func() bool {
		st, err := a.st.ReplicaStatus(ctx)
		return err == nil && st.AppliedEpoch == 2
	})
	bBefore := replicated(storetest.DumpDB(t, b.st.Path()))

	// a, resumed and deposed without knowing it, acknowledges a finding.
	fs, err := a.st.List(ctx, findings.ListFilter{})
	if err != nil || len(fs) != 2 {
		t.Fatalf("a's findings: %d %v", len(fs), err)
	}
	mst.fail.Store(failReads)
	if _, err := a.st.Act(ctx, fs[0].ID, findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "op"}, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	a.rel.Kick()
	// The follower's divergence follows the recorded one, change by change.
	var d records.Divergence
	testkit.Eventually(t, 10*time.Second, "a diverged as recorded, its outbox drained", func() bool {
		n, err := a.st.PendingCount(ctx)
		if err != nil || n != 0 {
			return false
		}
		// Read on to the stream's end: the divergence grows change by
		// change, and a record read halfway counts too few.
		if l := m.Lag(ctx); l == nil || l.Behind || l.LastSeq == 0 {
			return false
		}
		if d, err = a.st.Divergence(ctx); err != nil || !d.Diverged() {
			return false
		}
		got := m.Diverged()
		return got != nil && got.Error() == (&cluster.DivergedError{Divergence: d}).Error()
	})
	if d.LastWriter != "b" || !d.Since.Equal(now.Add(time.Hour)) || d.Fenced == 0 || len(d.FencedRows) != d.Fenced {
		t.Fatalf("a's divergence: %+v", d)
	}
	ack := records.DroppedRow{Kind: "findings upsert", ID: fs[0].ID}
	if !slices.Contains(append(d.FencedRows, d.Rows...), ack) {
		t.Fatalf("a's divergence does not name %+v: %+v", ack, d)
	}
	wantErr := (&cluster.DivergedError{Divergence: d}).Error()
	if err := m.Diverged(); err == nil || err.Error() != wantErr || !strings.Contains(wantErr, "fenced on every replica (") {
		t.Fatalf("m.Diverged() = %v, want %s", err, wantErr)
	}
	if got := metricValue(t, reg, "patrold_replica_diverged_rows_total"); got != float64(d.Fenced+d.Count) {
		t.Errorf("patrold_replica_diverged_rows_total = %v, want %d", got, d.Fenced+d.Count)
	}
	// Each own change fenced is handled once, a failed handling retried:
	// one error line each, whatever the metric's timing.
	if n := strings.Count(logs.String(), `"msg":"DATABASE DIVERGED: a change this instance wrote as a deposed writer was fenced`); n != d.Fenced {
		t.Errorf("a's log has %d divergence errors, want one for each of the %d fenced changes", n, d.Fenced)
	}

	// A caught-up instance serves a copy: a re-seeds itself.
	run(t, func(ctx context.Context) error { return b.f.ServeSeeds(ctx, b.b.Conn(), t.TempDir(), 1, b.f.SeedReady) })
	testkit.Eventually(t, reseedWithin, "a re-seeded itself", func() bool {
		return m.Diverged() == nil && strings.Contains(logs.String(), `"msg":"diverged database re-seeded from a caught-up instance`)
	})
	if got := metricValue(t, reg, "patrold_replica_reseeds_total"); got != 1 {
		t.Errorf("patrold_replica_reseeds_total = %v, want 1", got)
	}
	storetest.SameDB(t, "b after a's fenced write", replicated(storetest.DumpDB(t, b.st.Path())), bBefore)
	storetest.SameDB(t, "a after its re-seed", replicated(storetest.DumpDB(t, a.st.Path())), bBefore)

	// a follows b on.
	if _, err := b.st.Act(ctx, fs[1].ID, findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "op"}, now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	b.rel.Kick()
	caughtUp(t, b, b.f)
	testkit.Eventually(t, 10*time.Second, "a caught up", func() bool {
		l := m.Lag(ctx)
		return l != nil && !l.Behind
	})
	storetest.SameDB(t, "a following b", replicated(storetest.DumpDB(t, a.st.Path())), replicated(storetest.DumpDB(t, b.st.Path())))
	if m.Diverged() != nil {
		t.Fatalf("a diverged again: %v", m.Diverged())
	}
}

// takeOver makes n the writer with epoch: it captures, its relay runs,
// and its follower (running) applied its epoch marker.
func takeOver(t *testing.T, n *node, epoch uint64) {
	t.Helper()
	ctx := context.Background()
	if err := n.f.EnableCapture(ctx, epoch); err != nil {
		t.Fatal(err)
	}
	run(t, n.rel.Run)
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := n.f.AwaitEpoch(actx, epoch); err != nil {
		t.Fatal(err)
	}
}
