package patrol_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot/demo"
	"github.com/patrold/patrold/store"
)

// brokenHistory is a store whose history fails after it was written.
type brokenHistory struct {
	*store.Store
	fail bool
}

func (b *brokenHistory) UsageSeries(ctx context.Context, ids []string) (map[string][]signals.Point, error) {
	if b.fail {
		return nil, errors.New("disk I/O error")
	}
	return b.Store.UsageSeries(ctx, ids)
}

// TestForecastThroughTheRun: on a new database the demo fleet's history
// is backfilled, the run records its own usage, and capacity_forecast is
// filed for the storage that fills. When the history fails, the run is
// degraded and the forecast finding is not resolved by its absence.
func TestForecastThroughTheRun(t *testing.T) {
	st, src, now := forecastFleet(t)
	hist := &brokenHistory{Store: st}
	runner := forecastRunner(t, st, src, now, hist)
	rep, err := runner.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rep.Signals, func(s signals.Signal) bool { return s.Type == signals.TypeCapacityForecast })
	if i < 0 {
		t.Fatalf("no capacity_forecast in %d signals", len(rep.Signals))
	}
	s := rep.Signals[i]
	if s.ResourceID != demo.ShowcaseFilling || s.Severity != signals.SeverityWatch || s.Evidence["points"] != 13 {
		t.Errorf("forecast %+v", s)
	}
	series, _ := st.UsageSeries(context.Background(), []string{demo.ShowcaseFilling, "vm/104"})
	if len(series[demo.ShowcaseFilling]) != 13 || len(series["vm/104"]) != 1 {
		t.Errorf("stored: %d and %d points", len(series[demo.ShowcaseFilling]), len(series["vm/104"]))
	}
	active, _ := st.Active(context.Background())
	if !slices.ContainsFunc(active, func(f findings.Finding) bool {
		return f.Key == "capacity_forecast" && f.ResourceID == demo.ShowcaseFilling && f.ResourceNode == "pve1"
	}) {
		t.Fatalf("no capacity_forecast finding on node pve1 among %d", len(active))
	}
	// Every finding names its resource's node.
	for _, f := range active {
		if f.ResourceNode != "pve1" && f.ResourceNode != "pve2" {
			t.Errorf("%s on %s has node %q", f.Key, f.ResourceID, f.ResourceNode)
		}
	}
	hist.fail = true
	*now = now.Add(time.Minute) // the source and the runner read this clock
	rep, err = runner.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != patrol.StatusDegraded || !slices.Contains(rep.StatusReasons, patrol.ReasonHistoryFailed) ||
		!slices.Contains(rep.Errors, "usage history: disk I/O error") {
		t.Errorf("failing history: status %s reasons %v errors %v", rep.Status, rep.StatusReasons, rep.Errors)
	}
	active, _ = st.Active(context.Background())
	if !slices.ContainsFunc(active, func(f findings.Finding) bool {
		return f.Key == "capacity_forecast" && f.ResourceID == demo.ShowcaseFilling
	}) {
		t.Errorf("the forecast finding resolved while the history failed")
	}
}

// forecastFleet opens a new store and the 40-resource demo fleet the
// forecast tests run. The fleet reads the clock it returns; a test
// moves it, and the runner reads it too.
func forecastFleet(t *testing.T) (*store.Store, *demo.Source, *time.Time) {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "patrold.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := new(time.Time)
	*now = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	src, err := demo.New(demo.Options{Seed: 1, Resources: 40, FaultRate: 0.1, ChangeEvery: 2 * time.Minute}, func() time.Time { return *now })
	if err != nil {
		t.Fatal(err)
	}
	return st, src, now
}

// forecastRunner is a runner over src whose usage history is hist.
func forecastRunner(t *testing.T, st *store.Store, src *demo.Source, now *time.Time, hist patrol.UsageHistory) *patrol.Runner {
	t.Helper()
	pol, _ := alerts.New(alerts.Settings{})
	runner, err := patrol.New(patrol.Options{Store: st, Now: func() time.Time { return *now }, History: hist,
		Settings: func() patrol.Settings {
			return patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy(), Source: src}
		}})
	if err != nil {
		t.Fatal(err)
	}
	return runner
}
