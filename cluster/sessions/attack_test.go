package sessions_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/cluster/sessions"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store/records"
	"github.com/patrold/patrold/store/storetest"
)

// Item 4 of the bus attack: with the session service reachable, a forged
// session (one patrold never dispatched) is refused and nothing stored
// changes; the spend ledger stays what patrold's own sessions spent.
func TestForgedSessionsRefused(t *testing.T) {
	r := newRig(t, true)
	ctx := context.Background()
	before := storetest.DumpDB(t, filepath.Join(r.dir, "patrold.db"))
	spent, err := r.st.SessionSpent(ctx, t0.Add(-time.Hour), "")
	if err != nil {
		t.Fatal(err)
	}

	// No investigation of attempt 2 was dispatched.
	err = r.client.StartSession(ctx, "forged-1", r.f.ID, r.f.Attempt+1, "playbook", t0)
	if !errors.Is(err, assistant.ErrNotDispatched) {
		t.Fatalf("forged start of an undispatched attempt: %v, want assistant.ErrNotDispatched", err)
	}
	// A session nobody started records no end and no spend.
	err = r.client.FinishSession(ctx, "forged-2", records.SessionEnd{Outcome: "fix_verified", Summary: "forged", FinishedAt: t0, CostUSD: 100000})
	if !errors.Is(err, findings.ErrNotFound) {
		t.Fatalf("forged end of an unknown session: %v, want findings.ErrNotFound", err)
	}
	storetest.SameDB(t, "after forged session calls", storetest.DumpDB(t, filepath.Join(r.dir, "patrold.db")), before)
	if got, err := r.st.SessionSpent(ctx, t0.Add(-time.Hour), ""); err != nil || got != spent {
		t.Fatalf("spend after forged calls: %v %v, want %v", got, err, spent)
	}

	// A session of an investigation that already ended takes no end.
	if err := r.client.StartSession(ctx, "real-1", r.f.ID, r.f.Attempt, "playbook", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := r.st.RecordOutcome(ctx, findings.Outcome{FindingID: r.f.ID, SessionID: "real-1", Attempt: r.f.Attempt,
		Outcome: findings.OutcomeCannotFix, Summary: "nothing to do"}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	ended := storetest.DumpDB(t, filepath.Join(r.dir, "patrold.db"))
	err = r.client.FinishSession(ctx, "real-1", records.SessionEnd{Outcome: "fix_verified", FinishedAt: t0, CostUSD: 100000})
	if !errors.Is(err, assistant.ErrNotDispatched) {
		t.Fatalf("end of a session whose investigation ended: %v, want assistant.ErrNotDispatched", err)
	}
	storetest.SameDB(t, "after a late session end", storetest.DumpDB(t, filepath.Join(r.dir, "patrold.db")), ended)
}

// Budgets count what patrold's own sessions recorded: a session end
// cannot claim more than one session may spend (model.budget.per_run_usd)
// or a negative cost, and an end retried after a lost answer counts its
// spend once.
func TestSessionSpendCountsOnce(t *testing.T) {
	r := newRig(t, true, sessions.WithMaxCost(2))
	ctx := context.Background()
	db := filepath.Join(r.dir, "patrold.db")
	if err := r.client.StartSession(ctx, "real-1", r.f.ID, r.f.Attempt, "playbook", t0); err != nil {
		t.Fatal(err)
	}
	started := storetest.DumpDB(t, db)
	for _, cost := range []float64{100000, -5} {
		err := r.client.FinishSession(ctx, "real-1", records.SessionEnd{Outcome: "fix_verified", FinishedAt: t0, CostUSD: cost})
		var re *sessions.RemoteError
		if !errors.As(err, &re) || re.Code != "400" || !strings.Contains(re.Description, fmt.Sprintf("end.cost_usd: %g is outside 0..2", cost)) {
			t.Fatalf("session end costing %g: %v, want a 400 naming end.cost_usd", cost, err)
		}
		storetest.SameDB(t, fmt.Sprintf("after a session end costing %g", cost), storetest.DumpDB(t, db), started)
	}
	end := records.SessionEnd{Outcome: "fix_verified", Summary: "grew the pool", FinishedAt: t0.Add(time.Minute), CostUSD: 0.5}
	for range 2 {
		if err := r.client.FinishSession(ctx, "real-1", end); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := r.st.SessionSpent(ctx, t0.Add(-time.Hour), ""); err != nil || got != 0.5 {
		t.Fatalf("spend after a retried end: %v %v, want 0.5", got, err)
	}
}
