package signals_test

import (
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// TestUpdatesPendingCritical: with node.updates_age critical set, updates
// pending more than critical days are critical, at critical days a
// warning (above trigger); a finding not yet open has no age.
func TestUpdatesPendingCritical(t *testing.T) {
	policy, err := alerts.New(alerts.Settings{Defaults: alerts.KindSettings{Node: alerts.NodeSettings{UpdatesAge: alerts.ThresholdSetting{Critical: f(60)}}}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	snap := &snapshot.Snapshot{Version: 1, TakenAt: now, Resources: []snapshot.Resource{{ID: "node/pve1", Kind: snapshot.KindNode, Name: "pve1",
		Status: snapshot.StatusOnline, Updates: &snapshot.Updates{Packages: 1, Names: []string{"zlib1g"}}}}}
	key := signals.Key{Type: signals.TypeUpdatesPending, ResourceID: "node/pve1"}
	for _, c := range []struct {
		opened   signals.Opened
		severity string
	}{
		{nil, signals.SeverityWatch},
		{signals.Opened{key: now.Add(-60 * 24 * time.Hour)}, signals.SeverityWarning},
		{signals.Opened{key: now.Add(-60*24*time.Hour - 3*time.Hour)}, signals.SeverityCritical},
	} {
		sigs := signals.DetectOpened(snap, policy, signals.Active{key: c.opened != nil}, c.opened)
		if len(sigs) != 1 || sigs[0].Severity != c.severity {
			t.Errorf("opened %v: %+v, want one %s", c.opened, sigs, c.severity)
		}
	}
}

// The age threshold's rules: a count of days, clear at most trigger,
// critical above it, at most ten years.
func TestUpdatesAgeThresholdRules(t *testing.T) {
	for _, c := range []struct {
		set  alerts.ThresholdSetting
		want string
	}{
		{alerts.ThresholdSetting{Trigger: f(30), Clear: f(31)}, "alerts.defaults.node.updates_age.clear: 31 must be at most trigger 30"},
		{alerts.ThresholdSetting{Critical: f(30)}, "alerts.defaults.node.updates_age.critical: 30 must be above trigger 30"},
		{alerts.ThresholdSetting{Trigger: f(4000)}, "alerts.defaults.node.updates_age.trigger: 4000 is outside (0, 3650]"},
	} {
		_, err := alerts.New(alerts.Settings{Defaults: alerts.KindSettings{Node: alerts.NodeSettings{UpdatesAge: c.set}}})
		if err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %q", c.set, err, c.want)
		}
	}
}
