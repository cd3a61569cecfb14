package store_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
)

// TestOperatorActionsThatEndAnAlertArePublished: dismissing or
// suppressing a finding publishes exactly one event of that name, so a
// subscriber (the Alertmanager sink) ends the alert at once; a plain
// acknowledgement publishes nothing.
func TestOperatorActionsThatEndAnAlertArePublished(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	ch := commit(t, st, now, true,
		fobs("node/a", "high_cpu", findings.SeverityWarning, "cpu 91"),
		fobs("node/b", "high_cpu", findings.SeverityWarning, "cpu 92"),
		fobs("node/c", "high_cpu", findings.SeverityWarning, "cpu 93"))
	now = now.Add(time.Minute)
	for _, a := range []struct {
		id  string
		req findings.ActionRequest
	}{
		{ch[0].Finding.ID, findings.ActionRequest{Action: findings.ActionDismiss, Reason: findings.DismissExpectedBehavior}},
		{ch[1].Finding.ID, findings.ActionRequest{Action: findings.ActionSuppress}},
		{ch[2].Finding.ID, findings.ActionRequest{Action: findings.ActionAcknowledge}},
	} {
		if _, err := st.Act(ctx, a.id, a.req, now); err != nil {
			t.Fatalf("%s: %v", a.req.Action, err)
		}
	}
	got := pendingByFinding(t, st)
	want := map[string]int{
		"node/a patrold.finding.opened": 1, "node/b patrold.finding.opened": 1, "node/c patrold.finding.opened": 1,
		"node/a patrold.finding.dismissed": 1, "node/b patrold.finding.suppressed": 1,
	}
	if len(got) != len(want) {
		t.Fatalf("pending events %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Fatalf("pending events %v, want %v", got, want)
		}
	}
}

// TestUndoneActionsArePublished: undismissing or unsuppressing an active
// finding publishes undismissed or unsuppressed, so the sink raises the
// alert again at once; undoing one of two actions (still suppressed or
// still dismissed), or undoing on a resolved finding, publishes nothing.
func TestUndoneActionsArePublished(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	ch := commit(t, st, now, true,
		fobs("node/a", "high_cpu", findings.SeverityWarning, "cpu 91"),
		fobs("node/b", "high_cpu", findings.SeverityWarning, "cpu 92"),
		fobs("node/c", "high_cpu", findings.SeverityWarning, "cpu 93"),
		fobs("node/d", "high_cpu", findings.SeverityWarning, "cpu 94"))
	a, b, c, d := ch[0].Finding.ID, ch[1].Finding.ID, ch[2].Finding.ID, ch[3].Finding.ID
	act := func(id string, req findings.ActionRequest) {
		t.Helper()
		now = now.Add(time.Minute)
		if _, err := st.Act(ctx, id, req, now); err != nil {
			t.Fatalf("%s %s: %v", req.Action, id, err)
		}
	}
	dismiss := findings.ActionRequest{Action: findings.ActionDismiss, Reason: findings.DismissNotAnIssue}
	act(a, dismiss)
	act(a, findings.ActionRequest{Action: findings.ActionUndismiss})
	act(b, findings.ActionRequest{Action: findings.ActionSuppress})
	act(b, findings.ActionRequest{Action: findings.ActionUnsuppress})
	// c: dismissed and suppressed; undoing either alone shows nothing
	act(c, dismiss)
	act(c, findings.ActionRequest{Action: findings.ActionSuppress})
	act(c, findings.ActionRequest{Action: findings.ActionUndismiss})
	act(c, findings.ActionRequest{Action: findings.ActionUnsuppress}) // now shown again
	act(c, findings.ActionRequest{Action: findings.ActionSuppress})
	act(c, dismiss)
	act(c, findings.ActionRequest{Action: findings.ActionUnsuppress})
	// d: dismissed, then resolved by the operator; the undismissal is moot
	act(d, dismiss)
	act(d, findings.ActionRequest{Action: findings.ActionResolve, Note: "fixed"})
	act(d, findings.ActionRequest{Action: findings.ActionUndismiss})
	want := map[string]int{
		"node/a patrold.finding.opened": 1, "node/a patrold.finding.dismissed": 1, "node/a patrold.finding.undismissed": 1,
		"node/b patrold.finding.opened": 1, "node/b patrold.finding.suppressed": 1, "node/b patrold.finding.unsuppressed": 1,
		"node/c patrold.finding.opened": 1, "node/c patrold.finding.dismissed": 2, "node/c patrold.finding.suppressed": 2,
		"node/c patrold.finding.unsuppressed": 1,
		"node/d patrold.finding.opened":       1, "node/d patrold.finding.dismissed": 1, "node/d patrold.finding.resolved": 1,
	}
	if got := pendingByFinding(t, st); !maps.Equal(got, want) {
		t.Fatalf("pending events\n%v\nwant\n%v", got, want)
	}
}
