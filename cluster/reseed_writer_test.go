package cluster_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/store/records"
	"github.com/patrold/patrold/store/storetest"
)

// keptLease is a switchLease that stays held whatever the member says
// of its database: the real lease releases itself only at its next
// renewal, and a re-seed can end sooner.
type keptLease struct{ *switchLease }

func (keptLease) StepDown(func() bool) {}

// TestReseededWriterCaptures: the partition test lost answered actions
// on every instance but one. A writer cut off with unsent changes got
// the lease back; while it became the writer again, its old changes
// reached the stream and were fenced, so it diverged and re-seeded. The
// copy came with capture off, and the instance wrote on uncaptured:
// each action answered 200 and reached no other instance. Whatever the
// order of promotion and re-seed, a writer captures every change.
func TestReseededWriterCaptures(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	lease := &switchLease{}
	lease.term.Store(1)
	lease.leader.Store(true)
	lead := cluster.NewLeadership(true, time.Now)
	m, logs := startMember(t, cluster.Options{Bus: a.b, Lease: keptLease{lease}, Leadership: lead, Store: a.st, Instance: "a",
		DataDir: t.TempDir(), Replicas: 1, Kick: a.rel.Kick, Resend: a.rel.Resend})
	rctx, stopRelay := context.WithCancel(ctx)
	relayDone := make(chan struct{})
	go func() { defer close(relayDone); _ = a.rel.Run(rctx) }()
	run(t, b.f.Run)
	testkit.Eventually(t, 10*time.Second, "a is the writer", lead.IsWriter)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commitRun(t, a.st, now, obs("vm-1", "cpu"))
	a.rel.Kick()
	caughtUp(t, a, b.f)

	// a is cut off: its relay stops, it commits, its lease goes.
	stopRelay()
	<-relayDone
	commitRun(t, a.st, now.Add(time.Hour), obs("vm-1", "cpu"), obs("vm-2", "disk"))
	unsent, err := a.st.UnsentState(ctx)
	if err != nil || unsent == 0 {
		t.Fatalf("a's unsent state changes: %d, %v; want some", unsent, err)
	}
	lease.leader.Store(false)
	testkit.Eventually(t, 10*time.Second, "a stepped down", func() bool {
		return strings.Contains(logs.String(), "standby: leader lease lost")
	})

	// b writes at epoch 2 and serves copies.
	takeOver(t, b, 2)
	run(t, func(ctx context.Context) error { return b.f.ServeSeeds(ctx, b.b.Conn(), t.TempDir(), 1, b.f.SeedReady) })
	testkit.Eventually(t, 10*time.Second, "a applied b's epoch", func() bool {
		st, err := a.st.ReplicaStatus(ctx)
		return err == nil && st.AppliedEpoch == 2
	})

	// a's lease comes back at term 3: a captures again, its epoch marker
	// queued behind its old changes.
	lease.term.Store(3)
	lease.leader.Store(true)
	testkit.EventuallyState(t, 10*time.Second, "a queued its epoch marker", func() (bool, string) {
		n, err := a.st.UnsentState(ctx)
		return err == nil && n > unsent, fmt.Sprintf("%d unsent (%d before), %v", n, unsent, err)
	})
	// Its relay runs again: the old changes are fenced (a diverges and
	// re-seeds from b), then its marker applies.
	run(t, a.rel.Run)
	testkit.Eventually(t, reseedWithin, "a re-seeded and writes", func() bool {
		return lead.IsWriter() && m.Diverged() == nil && strings.Contains(logs.String(), "diverged database re-seeded")
	})

	// Diverged while catching up, a was never the writer before its re-seed.
	log := logs.String()
	diverged, reseeded := strings.Index(log, "DATABASE DIVERGED"), strings.Index(log, "diverged database re-seeded")
	if diverged < 0 || reseeded < diverged {
		t.Fatalf("a's log: divergence at %d, re-seed at %d", diverged, reseeded)
	}
	if strings.Contains(log[diverged:reseeded], "leader: caught up with the state stream, writing") {
		t.Errorf("a wrote on its diverged database before the re-seed")
	}

	// What the writer commits now reaches b.
	commitRun(t, a.st, now.Add(3*time.Hour), obs("vm-4", "cpu"))
	a.rel.Kick()
	caughtUp(t, a, b.f)
	storetest.SameDB(t, "b following a", replicated(storetest.DumpDB(t, b.st.Path())), replicated(storetest.DumpDB(t, a.st.Path())))
}

// TestNewTenureStartsANewEpoch: a lease lost and won again between two
// looks of the member is a new tenure with a higher term. The writer
// starts over in a new epoch: went on in the old one, every change it
// wrote would be fenced.
func TestNewTenureStartsANewEpoch(t *testing.T) {
	ctx := context.Background()
	a := newNodes(t, "a")[0]
	lease, lead := heldLease()
	startMember(t, cluster.Options{Bus: a.b, Lease: lease, Leadership: lead, Store: a.st, Instance: "a",
		DataDir: t.TempDir(), Replicas: 1, Kick: a.rel.Kick})
	run(t, a.rel.Run)
	testkit.Eventually(t, 10*time.Second, "a is the writer", lead.IsWriter)
	epochIs := func(want uint64) func() (bool, string) {
		return func() (bool, string) {
			st, err := a.st.ReplicaStatus(ctx)
			return err == nil && st.AppliedEpoch == want && lead.IsWriter(), fmt.Sprintf("%+v, %v, writer %v", st, err, lead.IsWriter())
		}
	}
	testkit.EventuallyState(t, 10*time.Second, "a writes in epoch 5", epochIs(5))
	lease.term.Store(6)
	testkit.EventuallyState(t, 10*time.Second, "a writes in epoch 6", epochIs(6))
}

// TestReseededOwnChangesApply: a writer's own changes still on their
// way when it re-seeds (from a copy taken before they were applied) are
// not in its database any more. Applied as any writer's, they come back:
// only changes this database captured since its re-seed are its own,
// and one of those fenced is no divergence.
func TestReseededOwnChangesApply(t *testing.T) {
	ctx := context.Background()
	a := newNodes(t, "a")[0]
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	good := filepath.Join(t.TempDir(), "copy.db")
	if _, err := a.st.SeedCopy(ctx, good); err != nil {
		t.Fatal(err)
	}
	if err := a.f.EnableCapture(ctx, 3); err != nil {
		t.Fatal(err)
	}
	sil, err := a.st.AddSilence(ctx, findings.Silence{Matchers: findings.Matchers{Resource: "vm-1"}, Comment: "window", Author: "op",
		EndsAt: now.Add(time.Hour)}, now)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := a.st.PendingEvents(ctx, 10)
	if err != nil || len(rows) != 2 {
		t.Fatalf("a's outbox: %d rows, %v; want the epoch marker and the silence", len(rows), err)
	}
	if err := a.st.DisableCapture(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.st.Reseed(ctx, good); err != nil {
		t.Fatal(err)
	}
	for i, row := range rows {
		c, err := contracts.DecodeStateChange(row.Data)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := a.st.ApplyState(ctx, uint64(i+1), "a", c, now); err != nil || res != records.Applied {
			t.Fatalf("apply %s: %v, %v", row.Type, res, err)
		}
	}
	got, err := a.st.Silences(ctx, now, false)
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], sil) {
		t.Fatalf("a's silences after its own change applied: %+v, %v; want %+v", got, err, sil)
	}
	// One from an older epoch is fenced, but its rows went with the
	// re-seed: no divergence.
	late := contracts.StateChange{Origin: "a", Epoch: 2, N: 2, Table: "silences", Op: contracts.OpDelete, RowID: 1}
	if res, err := a.st.ApplyState(ctx, uint64(len(rows)+1), "a", late, now); err != nil || res != records.ApplyFenced {
		t.Fatalf("apply a's change of epoch 2: %v, %v; want fenced", res, err)
	}
	if d, err := a.st.Divergence(ctx); err != nil || d.Diverged() {
		t.Fatalf("a's divergence after its fenced change from before the re-seed: %+v, %v; want none", d, err)
	}

	// One it captured since is its own: met again (stored late after a
	// copy of its record applied, or sent again into a stream created
	// again), it is skipped as applied, never a gap.
	if err := a.f.EnableCapture(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := a.st.AddSilence(ctx, findings.Silence{Matchers: findings.Matchers{Resource: "vm-2"}, Comment: "again", Author: "op",
		EndsAt: now.Add(time.Hour)}, now); err != nil {
		t.Fatal(err)
	}
	seq := uint64(len(rows) + 1)
	rows, err = a.st.PendingEvents(ctx, 10)
	if err != nil || len(rows) != 4 {
		t.Fatalf("a's outbox: %d rows, %v; want two epoch markers and two silences", len(rows), err)
	}
	rows = rows[2:] // epoch 4's
	for i, want := range []records.Apply{records.Applied, records.Applied, records.ApplyDuplicate} {
		c, err := contracts.DecodeStateChange(rows[min(i, 1)].Data)
		if err != nil {
			t.Fatal(err)
		}
		seq++
		if res, err := a.st.ApplyState(ctx, seq, "a", c, now); err != nil || res != want {
			t.Fatalf("apply a's own change %d (%d): %v, %v; want %v", c.N, i, res, err, want)
		}
	}
}
