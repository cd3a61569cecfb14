package daemon_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
)

// TestOperatorActionPublishedOnCommit: with the relay's poll set to an
// hour, an dismissal and a silence still reach the stream at once.
// Only the commit's wake can publish them within the wait.
func TestOperatorActionPublishedOnCommit(t *testing.T) {
	daemon.SetRelayInterval(time.Hour)
	t.Cleanup(func() { daemon.SetRelayInterval(0) })
	dir := t.TempDir()
	useSnapshot(t, dir, "faults.json")
	d := start(t, testConfig(t, dir, "", ""))
	ctx := context.Background()
	pending := func() int64 {
		n, err := d.Store().PendingCount(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	rep, err := d.RunNow(ctx, patrol.TriggerManual)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) == 0 {
		t.Fatal("the run filed no findings")
	}
	testkit.Eventually(t, 20*time.Second, "the run's events are published", func() bool { return pending() == 0 })

	c := subscribe(t, d)
	f := rep.Findings[0]
	now := time.Now()
	if _, err := d.Store().Act(ctx, f.ID, findings.ActionRequest{Action: findings.ActionDismiss, Reason: findings.DismissNotAnIssue, Actor: "op"}, now); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "the dismissal is published without the poll", func() bool { return pending() == 0 })
	got := c.waitCount(t, 1)
	want := []string{"patrold.finding.dismissed patrol.findings.dismissed.warning"}
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}
