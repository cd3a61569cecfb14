package signals_test

import (
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// TestScrubAgeCritical: storage.scrub_age critical, when set, makes a
// scrub more days old than it critical; at critical it stays a warning.
func TestScrubAgeCritical(t *testing.T) {
	policy, err := alerts.New(alerts.Settings{Defaults: alerts.KindSettings{Storage: alerts.StorageSettings{ScrubAge: alerts.ThresholdSetting{Critical: f(60)}}}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		ago      time.Duration
		severity string
	}{
		{60 * 24 * time.Hour, signals.SeverityWarning},
		{60*24*time.Hour + 3*time.Hour, signals.SeverityCritical},
	} {
		at := now.Add(-c.ago)
		snap := &snapshot.Snapshot{Version: 1, TakenAt: now, Resources: []snapshot.Resource{{ID: "storage/pve1/zpool/tank", Kind: snapshot.KindStorage,
			Name: "tank", Status: snapshot.StatusOnline, ZFS: &snapshot.ZFS{State: "ONLINE", Scrub: &snapshot.Scrub{State: snapshot.ScrubFinished, At: &at}}}}}
		sigs := signals.Detect(snap, policy, nil)
		if len(sigs) != 1 || sigs[0].Severity != c.severity {
			t.Errorf("scrubbed %s ago: %+v, want one %s", c.ago, sigs, c.severity)
		}
	}
}
