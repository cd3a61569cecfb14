package cluster_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/store/storetest"
)

// TestLateChangeAfterTheHoldBoundApplies: the writer's relay backs off
// up to 30 s, longer than the hold bound, so a change it retries can be
// stored after a standby called it a gap. Every later consumer stopped
// at the first held change and called it a gap again, never reading on
// to the change now stored: a partition run ended with standbys gapped
// for good ("state changes 267..270 are missing") and no instance
// caught up to serve a copy. Past the bound a consumer reads on to the
// stream's last change before it calls anything a gap: the late change
// applies and the gap clears, without a re-seed.
func TestLateChangeAfterTheHoldBoundApplies(t *testing.T) {
	ctx := context.Background()
	nodes := newNodes(t, "a", "b")
	a, b := nodes[0], nodes[1]
	byHand(t, 1, a, b) // hold bound 1 s
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	commitRun(t, a.st, now, obs("vm-1", "cpu"), obs("vm-2", "disk"))
	rows, err := a.st.PendingEvents(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	numbered := stateRows(t, rows)
	if len(numbered) < 4 {
		t.Fatalf("only %d numbered state changes", len(numbered))
	}
	n := numbered[1]
	publishRows(t, a, rows[:n]...)
	publishRows(t, a, rows[n+1:numbered[3]+1]...)
	testkit.Eventually(t, 10*time.Second, "b calls the missing change a gap", func() bool { return b.f.Gap() != nil })
	gaps := b.f.Gaps()
	publishRows(t, a, rows[n])
	publishRows(t, a, rows[numbered[3]+1:]...)
	testkit.EventuallyState(t, 10*time.Second, "b applies the late change, no gap", func() (bool, string) {
		lag, err := b.f.Lag(ctx)
		return err == nil && lag.LastSeq > 0 && !lag.Behind && lag.Gap == "", fmt.Sprintf("%+v %v", lag, err)
	})
	if got := b.f.Gaps(); got != gaps {
		t.Errorf("%d gaps counted, want %d (the first only)", got, gaps)
	}
	// The writer's own follower: its relay finds every row stored.
	run(t, a.rel.Run)
	caughtUp(t, a, a.f)
	storetest.SameDB(t, "standby after the late change",
		replicated(storetest.DumpDB(t, filepath.Join(filepath.Dir(b.st.Path()), "patrold.db"))),
		replicated(storetest.DumpDB(t, filepath.Join(filepath.Dir(a.st.Path()), "patrold.db"))))
}
