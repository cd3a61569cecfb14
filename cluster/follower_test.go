package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/records"
)

type node struct {
	st   *store.Store
	b    *bus.Bus
	f    *cluster.Follower
	rel  *bus.Relay
	name string
	log  testkit.LogBuffer // a follower's log, when the test gives it one
}

// streamOf is n's state stream and its info now.
func streamOf(t *testing.T, n *node) (jetstream.Stream, *jetstream.StreamInfo) {
	t.Helper()
	ctx := context.Background()
	s, err := n.b.JetStream().Stream(ctx, n.b.StreamName())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s, info
}

// purgeAll removes every change n's stream holds so far, as if they
// had aged out of it: a replica starting now cannot read them.
func purgeAll(t *testing.T, n *node) {
	t.Helper()
	ctx := context.Background()
	s, info := streamOf(t, n)
	if err := s.Purge(ctx, jetstream.WithPurgeSequence(info.State.LastSeq+1)); err != nil {
		t.Fatal(err)
	}
}

func newNode(t *testing.T, o bus.Options, name string) *node {
	t.Helper()
	return newGuardedNode(t, o, name, testGuard(t, nil, nil), nil)
}

// newGuardedNode is newNode with the deployment key's guard g; now, when
// set, is the follower's clock.
func newGuardedNode(t *testing.T, o bus.Options, name string, g *bus.Guard, now func() time.Time) *node {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "patrold.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b, err := bus.New(o, nil, nil, bus.WithEmbedded(embedded.Start), bus.WithGuard(g))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	f, err := cluster.NewFollower(cluster.FollowerOptions{JetStream: b.JetStream(), Stream: b.StreamName(), Prefix: b.Prefix(), Store: st, Instance: name,
		Guard: g, Now: now, HoldFor: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rel, err := bus.NewRelay(bus.RelayOptions{Outbox: st, JetStream: b.JetStream(), Prefix: b.Prefix(), Interval: 20 * time.Millisecond, Guard: g})
	if err != nil {
		t.Fatal(err)
	}
	return &node{st: st, b: b, f: f, rel: rel, name: name}
}

// newNodes starts one node per name; the first runs the embedded NATS
// server the others connect to.
func newNodes(t *testing.T, names ...string) []*node {
	t.Helper()
	o := bus.DefaultOptions()
	o.Embedded.Listen = "127.0.0.1:0"
	o.Embedded.StoreDir = t.TempDir()
	out := []*node{newNode(t, o, names[0])}
	for _, n := range names[1:] {
		out = append(out, newNode(t, clientOf(out[0]), n))
	}
	return out
}

// clientOf is the bus options of a node connecting to n's server.
func clientOf(n *node) bus.Options {
	o := bus.DefaultOptions()
	o.URL = n.b.ClientURL()
	return o
}

// replicate makes writer capture with epoch and runs its relay and
// follower (its own changes only advance it) and the followers'.
func replicate(t *testing.T, epoch uint64, writer *node, followers ...*node) {
	t.Helper()
	byHand(t, epoch, writer, followers...)
	run(t, writer.rel.Run)
}

// byHand is replicate without the writer's relay: its captured changes
// reach the stream only as the test publishes them (publishRows), in
// the order and at the time the test chooses.
func byHand(t *testing.T, epoch uint64, writer *node, followers ...*node) {
	t.Helper()
	if err := writer.f.EnableCapture(context.Background(), epoch); err != nil {
		t.Fatal(err)
	}
	run(t, writer.f.Run)
	for _, n := range followers {
		run(t, n.f.Run)
	}
}

// caughtUp waits until the writer published every state change it
// captured (the epoch marker published first is not enough) and each
// follower then applied the stream's last one.
func caughtUp(t *testing.T, writer *node, fs ...*cluster.Follower) {
	t.Helper()
	ctx := context.Background()
	testkit.Eventually(t, 10*time.Second, "the writer published every change", func() bool {
		n, err := writer.st.UnsentState(ctx)
		return err == nil && n == 0
	})
	for _, f := range fs {
		testkit.Eventually(t, 10*time.Second, "a follower caught up", func() bool {
			lag, err := f.Lag(ctx)
			return err == nil && lag.LastSeq > 0 && !lag.Behind && f.Gap() == nil
		})
	}
}

func run(t *testing.T, fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = fn(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// startMember starts a cluster member with o, logging JSON into the
// buffer it returns; the log is printed when the test fails, and the
// member stops at cleanup.
func startMember(t *testing.T, o cluster.Options) (*cluster.Member, *testkit.LogBuffer) {
	t.Helper()
	logs := &testkit.LogBuffer{}
	o.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	m, err := cluster.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Stop(context.Background())
		if t.Failed() {
			t.Logf("%s's log:\n%s", o.Instance, logs.String())
		}
	})
	return m, logs
}

func obs(resource, key string) findings.Observation {
	return findings.Observation{Key: key, ResourceID: resource, Category: "performance", Severity: findings.SeverityWarning,
		Source: findings.SourceDeterministic, Title: prompt.Safe(key, 4000), Description: prompt.Safe(key, 4000), Evidence: prompt.Safe(key, 4000), ResourceTags: prompt.SafeNames([]string{"prod"})}
}

func commitRun(t *testing.T, st *store.Store, at time.Time, o ...findings.Observation) {
	t.Helper()
	id := findings.NewID(at)
	_, err := st.CommitRun(context.Background(), findings.RunInput{RunID: id, Now: at, Observations: o, Complete: true, Reconcile: true,
		Policy: findings.DefaultPublishPolicy(), Check: func(*findings.Finding) findings.Check { return findings.CheckAbsent }},
		func([]findings.Change) (findings.RunRecord, []findings.OutboxDraft, error) {
			return findings.RunRecord{ID: id, Trigger: "manual", Status: "issues_found", Analysis: "deterministic", StartedAt: at}, nil, nil
		})
	if err != nil {
		t.Fatal(err)
	}
}

func TestStandbyAppliesLeaderStateInOrderOnce(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b")
	leader, standby := nodes[0], nodes[1]

	replicate(t, 1, leader, standby)

	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commitRun(t, leader.st, now, obs("vm-1", "cpu"), obs("vm-2", "disk"))
	fs, err := leader.st.List(ctx, findings.ListFilter{})
	if err != nil || len(fs) != 2 {
		t.Fatalf("leader findings: %v %v", len(fs), err)
	}
	if _, err := leader.st.Act(ctx, fs[0].ID, findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "op"}, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	sil, err := leader.st.AddSilence(ctx, findings.Silence{Matchers: findings.Matchers{Resource: "vm-2"},
		Comment: "maintenance", Author: "op", StartsAt: now, EndsAt: now.Add(time.Hour)}, now.Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	leader.rel.Kick()

	// Caught up with the commits, not only with the epoch marker published
	// before them: the leader published everything, then the standby
	// applied the last change.
	testkit.Eventually(t, 10*time.Second, "standby caught up", func() bool {
		if n, err := leader.st.UnsentState(ctx); err != nil || n != 0 {
			return false
		}
		lag, err := standby.f.Lag(ctx)
		return err == nil && lag.LastSeq > 0 && !lag.Behind
	})
	if err := standby.f.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	want, _ := leader.st.List(ctx, findings.ListFilter{})
	got, err := standby.st.List(ctx, findings.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("standby findings differ:\n got %+v\nwant %+v", got, want)
	}
	wantSil, _ := leader.st.Silences(ctx, now, false)
	gotSil, _ := standby.st.Silences(ctx, now, false)
	if !reflect.DeepEqual(gotSil, wantSil) || len(gotSil) != 1 || gotSil[0].ID != sil.ID {
		t.Fatalf("standby silences %+v, want %+v", gotSil, wantSil)
	}
	// The standby wrote nothing to its own outbox.
	if n, err := standby.st.PendingCount(ctx); err != nil || n != 0 {
		t.Fatalf("standby outbox pending = %d, %v; want 0", n, err)
	}
	// Applying a sequence again is a no-op.
	st, _ := standby.st.ReplicaStatus(ctx)
	applied, err := standby.st.ApplyState(ctx, st.AppliedSeq, "a", contracts.StateChange{Origin: "a", Epoch: 1, Table: "findings", Op: "delete", RowID: 1}, now)
	if err != nil || applied != records.ApplySkipped {
		t.Fatalf("re-apply of seq %d: applied=%v err=%v; want skipped", st.AppliedSeq, applied, err)
	}
	if got2, _ := standby.st.List(ctx, findings.ListFilter{}); !reflect.DeepEqual(got2, want) {
		t.Fatalf("re-apply changed findings: %+v", got2)
	}
	if st.AppliedOrigin != "a" {
		t.Fatalf("standby's last writer = %q, want a", st.AppliedOrigin)
	}
	// A change captured but never published is what a restarted writer
	// drops when another instance wrote since.
	if n, err := leader.st.UnsentState(ctx); err != nil || n != 0 {
		t.Fatalf("leader unsent state = %d, %v; want 0 after the relay", n, err)
	}
	// The leader follows its own changes too (they only advance it).
	caughtUp(t, leader, leader.f)
	leaderSt, _ := leader.st.ReplicaStatus(ctx)
	if leaderSt.AppliedSeq != st.AppliedSeq {
		t.Fatalf("leader applied seq %d, standby %d: want equal", leaderSt.AppliedSeq, st.AppliedSeq)
	}
}

// Split brain: writer a (epoch 5) keeps writing after b took over with
// epoch 9. b's epoch marker is b's first change on the stream. Every
// change of a after it is fenced on every replica (b itself and the
// standby c). So a's late acknowledgement reaches no replica, and all
// replicas agree.
func TestDeposedWriterIsFenced(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b", "c")
	a, b, c := nodes[0], nodes[1], nodes[2]
	if err := a.f.EnableCapture(ctx, 5); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*node{a, b, c} {
		run(t, n.rel.Run)
		run(t, n.f.Run)
	}
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commitRun(t, a.st, now, obs("vm-1", "cpu"), obs("vm-2", "disk"))
	a.rel.Kick()
	caughtUp(t, a, b.f, c.f)

	// b takes over; its marker is its first change.
	if err := b.f.EnableCapture(ctx, 9); err != nil {
		t.Fatal(err)
	}
	b.rel.Kick()
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.f.AwaitEpoch(actx, 9); err != nil {
		t.Fatal(err)
	}
	// a, deposed without knowing it, acknowledges a finding.
	fs, err := a.st.List(ctx, findings.ListFilter{})
	if err != nil || len(fs) != 2 {
		t.Fatalf("a's findings: %v %v", len(fs), err)
	}
	if _, err := a.st.Act(ctx, fs[0].ID, findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "op"}, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	a.rel.Kick()
	testkit.Eventually(t, 10*time.Second, "a's acknowledgement is on the stream", func() bool {
		n, err := a.st.UnsentState(ctx)
		return err == nil && n == 0
	})
	for _, n := range []*node{b, c} {
		if err := n.f.CatchUp(actx); err != nil {
			t.Fatal(err)
		}
	}
	gotB, _ := b.st.List(ctx, findings.ListFilter{})
	gotC, _ := c.st.List(ctx, findings.ListFilter{})
	if !reflect.DeepEqual(gotC, gotB) {
		t.Fatalf("replicas disagree:\n b %+v\n c %+v", gotB, gotC)
	}
	for _, f := range gotC {
		if f.AcknowledgedAt != nil {
			t.Fatalf("the deposed writer's acknowledgement reached a replica: %+v", f)
		}
	}
	for _, n := range []*node{b, c} {
		st, err := n.st.ReplicaStatus(ctx)
		if err != nil || st.AppliedEpoch != 9 || st.Fenced == 0 {
			t.Fatalf("replica status %+v, %v: want epoch 9 and fenced changes", st, err)
		}
	}
}

// A replica that joins after the stream dropped early state changes (aged
// out by max_age) notices the missing numbers and applies nothing, instead
// of starting from what is left and diverging; a replica that read them in
// time goes on.
func TestReplicaNoticesMissingChanges(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	replicate(t, 1, a, b)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commitRun(t, a.st, now, obs("vm-1", "cpu"))
	a.rel.Kick()
	caughtUp(t, a, b.f)
	// The early changes age out; later ones arrive.
	purgeAll(t, a)
	commitRun(t, a.st, now.Add(time.Hour), obs("vm-1", "cpu"), obs("vm-2", "disk"))
	a.rel.Kick()

	d := newNode(t, clientOf(a), "d")
	run(t, d.f.Run)
	testkit.Eventually(t, 10*time.Second, "d reports the gap", func() bool { return d.f.Gap() != nil })
	var gap *records.GapError
	if err := d.f.Gap(); !errors.As(err, &gap) || gap.Want != 1 || gap.Got <= 1 || !strings.Contains(err.Error(), "re-seed it (patrold db seed)") {
		t.Fatalf("gap = %v", err)
	}
	if fs, err := d.st.List(ctx, findings.ListFilter{}); err != nil || len(fs) != 0 {
		t.Fatalf("d applied %d findings past the gap (%v)", len(fs), err)
	}
	if st, _ := d.st.ReplicaStatus(ctx); st.AppliedSeq != 0 {
		t.Fatalf("d advanced to seq %d past the gap", st.AppliedSeq)
	}
	lag, err := d.f.Lag(ctx)
	if err != nil || lag.Gap != d.f.Gap().Error() {
		t.Fatalf("lag %+v, %v", lag, err)
	}
	// b read the early changes in time: it follows on, no gap.
	caughtUp(t, a, b.f)
	want, _ := a.st.List(ctx, findings.ListFilter{})
	got, _ := b.st.List(ctx, findings.ListFilter{})
	if !reflect.DeepEqual(got, want) || len(got) != 2 || b.f.Gap() != nil {
		t.Fatalf("b findings %+v, want %+v (gap %v)", got, want, b.f.Gap())
	}
}

// A replica that cannot catch up is seeded from a caught-up one. The copy
// holds the state the stream no longer has and resumes the stream where
// the copy stood. It carries no outbox and no capture, and ends equal to
// the writer.
func TestSeedFromACaughtUpReplica(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	replicate(t, 3, a, b)
	run(t, func(ctx context.Context) error { return b.f.ServeSeeds(ctx, b.b.Conn(), t.TempDir(), 1, b.f.SeedReady) })
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commitRun(t, a.st, now, obs("vm-1", "cpu"), obs("vm-2", "disk"))
	a.rel.Kick()
	caughtUp(t, a, b.f)
	purgeAll(t, a)

	dst := filepath.Join(t.TempDir(), "patrold.db")
	seed, err := cluster.FetchSeed(ctx, b.b.Conn(), b.b.JetStream(), b.b.Guard(), b.b.Prefix(), dst)
	if err != nil {
		t.Fatal(err)
	}
	bst, _ := b.st.ReplicaStatus(ctx)
	if seed.Origin != "b" || seed.Signer != "k1" || len(seed.SHA256) != 64 || seed.AppliedSeq != bst.AppliedSeq || seed.Bytes == 0 {
		t.Fatalf("seed %+v, b at %+v", seed, bst)
	}
	st, err := store.Open(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if n, err := st.PendingCount(ctx); err != nil || n != 0 {
		t.Fatalf("the copy carries %d outbox events (%v)", n, err)
	}
	f, err := cluster.NewFollower(cluster.FollowerOptions{JetStream: b.b.JetStream(), Stream: b.b.StreamName(), Prefix: b.b.Prefix(), Store: st, Instance: "d", Guard: b.b.Guard()})
	if err != nil {
		t.Fatal(err)
	}
	run(t, f.Run)
	commitRun(t, a.st, now.Add(time.Hour), obs("vm-1", "cpu"), obs("vm-3", "mem"))
	a.rel.Kick()
	caughtUp(t, a, f)
	if l, _ := f.Lag(ctx); l.AppliedSeq <= seed.AppliedSeq {
		t.Fatalf("d applied up to %d, the copy stood at %d", l.AppliedSeq, seed.AppliedSeq)
	}
	want, _ := a.st.List(ctx, findings.ListFilter{})
	got, _ := st.List(ctx, findings.ListFilter{})
	if !reflect.DeepEqual(got, want) || len(got) != 2 { // vm-2 resolved in the second run
		t.Fatalf("seeded replica findings %+v, want %+v", got, want)
	}
	// A request not signed with the deployment key gets no copy.
	unsigned := filepath.Join(t.TempDir(), "unsigned.db")
	if _, err := cluster.FetchSeed(ctx, a.b.Conn(), a.b.JetStream(), nil, b.b.Prefix(), unsigned); err == nil ||
		err.Error() != "seed: b refused: seed request refused: message refused: unsigned" {
		t.Fatalf("unsigned seed request: %v", err)
	}
	// A replica that is not caught up refuses to serve a copy.
	if _, err := cluster.FetchSeed(ctx, a.b.Conn(), a.b.JetStream(), a.b.Guard(), "nobody", filepath.Join(t.TempDir(), "x.db")); err == nil ||
		!strings.Contains(err.Error(), "no patrold instance of the cluster answers on patrold_seed.nobody") {
		t.Fatalf("seed with nobody serving: %v", err)
	}
}

// A run that only re-detects findings replicates as one touch change per
// chunk, not one row image per finding, and the standby ends with the
// leader's rows exactly (last seen, last run, times raised).
func TestRedetectionReplicatesAsOneTouch(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	replicate(t, 1, a, b)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var many []findings.Observation
	for i := range 40 {
		many = append(many, obs(fmt.Sprintf("vm-%d", i), "cpu"))
	}
	commitRun(t, a.st, now, many...)
	a.rel.Kick()
	caughtUp(t, a, b.f)
	before, _ := b.st.ReplicaStatus(ctx)

	commitRun(t, a.st, now.Add(time.Hour), many...) // every finding re-detected, nothing else
	a.rel.Kick()
	caughtUp(t, a, b.f)
	after, _ := b.st.ReplicaStatus(ctx)
	want, _ := a.st.List(ctx, findings.ListFilter{})
	got, _ := b.st.List(ctx, findings.ListFilter{})
	if !reflect.DeepEqual(got, want) || len(got) != 40 || got[0].TimesRaised != 2 || !got[0].LastSeenAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("standby findings differ after a re-detection:\n got %+v\nwant %+v", got, want)
	}
	// The run row, its run_list trigger and the touch: a handful, not 40.
	if n := after.AppliedSeq - before.AppliedSeq; n > 6 {
		t.Fatalf("a re-detection of 40 findings took %d state changes", n)
	}
}
