package cluster_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/store/storetest"
)

// publishRows publishes outbox rows of n as its relay would (signed, the
// row id as the message id), one at a time, in the order given.
func publishRows(t *testing.T, n *node, rows ...contracts.OutboxEvent) {
	t.Helper()
	for _, row := range rows {
		m, err := bus.EventMessage(n.b.Prefix(), "patrold/test", row)
		if err != nil {
			t.Fatal(err)
		}
		n.b.Guard().Sign(m)
		if _, err := n.b.JetStream().PublishMsg(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
}

// stateRows is the index of every numbered state change among rows.
func stateRows(t *testing.T, rows []contracts.OutboxEvent) []int {
	t.Helper()
	var out []int
	for i, r := range rows {
		if r.Type != contracts.TypeStateChange {
			continue
		}
		c, err := contracts.DecodeStateChange(r.Data)
		if err != nil {
			t.Fatal(err)
		}
		if c.N > 0 {
			out = append(out, i)
		}
	}
	return out
}

// TestFollowerWaitsForAnEarlierChange: the stream stores the writer's
// change n+1 before n (a publish retried after the stream's leader
// moved). Every follower, the writer's own included, holds n+1 and what
// follows until n arrives, then applies them in the writer's numbering:
// no gap, and the standby's rows end equal to the writer's.
func TestFollowerWaitsForAnEarlierChange(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	if err := a.f.EnableCapture(ctx, 1); err != nil {
		t.Fatal(err)
	}
	run(t, a.f.Run)
	run(t, b.f.Run)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commitRun(t, a.st, now, obs("vm-1", "cpu"), obs("vm-2", "disk"))
	fs, err := a.st.List(ctx, findings.ListFilter{})
	if err != nil || len(fs) != 2 {
		t.Fatalf("writer findings: %d, %v", len(fs), err)
	}
	if _, err := a.st.Act(ctx, fs[0].ID, findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "op"}, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	rows, err := a.st.PendingEvents(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	numbered := stateRows(t, rows)
	if len(numbered) < 4 {
		t.Fatalf("only %d numbered state changes", len(numbered))
	}
	// Change n (the second numbered) is stored after n+1 and n+2.
	n := numbered[1]
	later := rows[n+1 : numbered[3]+1]
	publishRows(t, a, rows[:n]...)
	publishRows(t, a, later...)
	for _, f := range []*node{a, b} {
		testkit.EventuallyState(t, 10*time.Second, f.name+" holds the changes after the missing one", func() (bool, string) {
			lag, err := f.f.Lag(ctx)
			return err == nil && lag.WaitingFor > 0 && f.f.Gap() == nil, ""
		})
	}
	publishRows(t, a, rows[n])
	publishRows(t, a, rows[numbered[3]+1:]...)
	// The relay then finds every row on the stream (duplicates dropped).
	run(t, a.rel.Run)
	caughtUp(t, a, a.f, b.f)
	for _, f := range []*node{a, b} {
		if lag, err := f.f.Lag(ctx); err != nil || lag.WaitingFor != 0 || lag.Gap != "" {
			t.Fatalf("%s: lag %+v, %v", f.name, lag, err)
		}
	}
	storetest.SameDB(t, "standby after the reordered changes",
		replicated(storetest.DumpDB(t, filepath.Join(filepath.Dir(b.st.Path()), "patrold.db"))),
		replicated(storetest.DumpDB(t, filepath.Join(filepath.Dir(a.st.Path()), "patrold.db"))))
}
