package store_test

import (
	"context"
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
