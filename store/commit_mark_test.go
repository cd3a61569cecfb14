package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store"
)

// lastPending is the seq of the newest unsent outbox row (0: none).
func lastPending(t *testing.T, st *store.Store) int64 {
	t.Helper()
	rows, err := st.PendingEvents(context.Background(), 10000)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		return 0
	}
	return rows[len(rows)-1].Seq
}

// TestCommitMarkNamesTheRowsWritten: a mark raised by a commit names
// the last outbox row that commit wrote, through a transaction (an
// action) and a single statement (a silence) alike. A commit that
// writes no outbox row leaves the mark, and a commit outside the
// marked context never raises it.
func TestCommitMarkNamesTheRowsWritten(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	ch := commit(t, st, now, true,
		fobs("node/a", "high_cpu", findings.SeverityWarning, "cpu 91"),
		fobs("node/b", "high_cpu", findings.SeverityWarning, "cpu 92"))
	mctx, mark := store.TrackCommits(ctx)
	// An acknowledgement publishes nothing without capture.
	if _, err := st.Act(mctx, ch[0].Finding.ID, findings.ActionRequest{Action: findings.ActionAcknowledge}, now); err != nil {
		t.Fatal(err)
	}
	if got := mark.Seq(); got != 0 {
		t.Fatalf("after an acknowledgement that wrote no row: mark %d, want 0", got)
	}
	if _, err := st.Act(mctx, ch[0].Finding.ID, findings.ActionRequest{Action: findings.ActionDismiss, Reason: findings.DismissNotAnIssue}, now); err != nil {
		t.Fatal(err)
	}
	dismissed := lastPending(t, st)
	if got := mark.Seq(); got != dismissed || got == 0 {
		t.Fatalf("after a dismissal: mark %d, want its row %d", got, dismissed)
	}
	// Untracked commits leave the mark where it is.
	if _, err := st.Act(ctx, ch[1].Finding.ID, findings.ActionRequest{Action: findings.ActionDismiss, Reason: findings.DismissNotAnIssue}, now); err != nil {
		t.Fatal(err)
	}
	if got := mark.Seq(); got != dismissed {
		t.Fatalf("after an untracked dismissal: mark %d, want %d", got, dismissed)
	}
	// With capture on, a silence (one statement) writes its row image.
	if err := st.EnableCapture(ctx, "state.changes", "leader", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddSilence(mctx, findings.Silence{Matchers: findings.Matchers{Resource: "node/a"}, Comment: "maintenance",
		Author: "op", StartsAt: now, EndsAt: now.Add(time.Hour)}, now); err != nil {
		t.Fatal(err)
	}
	silenced := lastPending(t, st)
	if got := mark.Seq(); got != silenced || got <= dismissed {
		t.Fatalf("after a captured silence: mark %d, want its row %d (above %d)", got, silenced, dismissed)
	}
}
