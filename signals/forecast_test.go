package signals_test

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// series is value(t) sampled every step over span, ending at takenAt.
func series(span, step time.Duration, value func(daysAgo float64) float64) []signals.Point {
	var out []signals.Point
	for d := span; d >= 0; d -= step {
		out = append(out, signals.Point{At: takenAt.Add(-d), Value: value(d.Hours() / 24)})
	}
	return out
}

func pool(usage float64) snapshot.Resource {
	return snapshot.Resource{ID: "storage/pve1/local-zfs", Kind: snapshot.KindStorage, Name: "local-zfs", Status: "online",
		Metrics: snapshot.MetricsOf(map[string]float64{"usage_percent": usage})}
}

func forecastOf(t *testing.T, r snapshot.Resource, pts []signals.Point, active signals.Active) []signals.Signal {
	t.Helper()
	sigs, evaluated := signals.Forecast([]snapshot.Resource{r}, map[string][]signals.Point{r.ID: pts}, takenAt, policy(t, alerts.Settings{}), active)
	if len(sigs) > 0 && !evaluated[r.ID] {
		t.Errorf("%s signalled but not evaluated", r.ID)
	}
	return sigs
}

// TestForecastLinear: 80% now, +1 point a day over a week of hourly
// points: full in 20 days, a watch, with the whole evidence.
func TestForecastLinear(t *testing.T) {
	pts := series(7*24*time.Hour, time.Hour, func(ago float64) float64 { return 80 - ago })
	got := *one(t, forecastOf(t, pool(80), pts, nil))
	want := signals.Signal{Type: signals.TypeCapacityForecast, ResourceID: "storage/pve1/local-zfs", ResourceKind: snapshot.KindStorage,
		ResourceName: "local-zfs", Severity: signals.SeverityWatch, Category: signals.CategoryCapacity, Value: 20, Threshold: 30,
		Summary: "storage local-zfs (storage/pve1/local-zfs) fills in 20.0 days at +1.0 points a day (full about 2026-12-19), within 30 days",
		Evidence: map[string]any{"metric": "usage_percent", "method": "theil-sen", "slope_per_day": 1.0, "fitted_now": 80.0,
			"days_to_full": 20.0, "projected_full_at": "2026-12-19T06:00:00Z", "points": 169, "span_hours": 168.0,
			"trigger_days": 30.0, "clear_days": 35.0, "critical_days": 7.0}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n%+v\nwant\n%+v", got, want)
	}
}

// TestForecastEdges: both edges of the watch (30 days) and warning (7
// days) triggers, and the hysteresis up to clear (35 days).
func TestForecastEdges(t *testing.T) {
	active := signals.Active{{Type: signals.TypeCapacityForecast, ResourceID: "storage/pve1/local-zfs"}: true}
	for _, c := range []struct {
		days     float64
		active   signals.Active
		severity string
		held     bool
	}{
		{30.5, nil, "", false},
		{30, nil, signals.SeverityWatch, false},
		{7.5, nil, signals.SeverityWatch, false},
		{7, nil, signals.SeverityWarning, false},
		{0.5, nil, signals.SeverityWarning, false},
		{33, nil, "", false},
		{33, active, signals.SeverityWatch, true},
		{35, active, signals.SeverityWatch, true},
		{35.5, active, "", false},
	} {
		// 50% now, filling at 50/days points a day.
		perDay := 50 / c.days
		pts := series(48*time.Hour, 4*time.Hour, func(ago float64) float64 { return 50 - perDay*ago })
		sigs := forecastOf(t, pool(50), pts, c.active)
		if c.severity == "" {
			if len(sigs) != 0 {
				t.Errorf("%g days active=%v: %+v", c.days, c.active != nil, sigs)
			}
			continue
		}
		s := one(t, sigs)
		if s.Severity != c.severity || math.Abs(s.Value-c.days) > 0.01 || (s.Evidence["held_by_hysteresis"] == true) != c.held {
			t.Errorf("%g days active=%v: %+v", c.days, c.active != nil, s)
		}
	}
}

// TestForecastRobust: outliers, a daily cycle and noise leave the trend
// where it is; a shrinking, flat or short series is no signal.
func TestForecastRobust(t *testing.T) {
	week, hour := 7*24*time.Hour, time.Hour
	trend := func(ago float64) float64 { return 70 - 2*ago } // 15 days to full
	noisy := series(week, hour, trend)
	for i := range noisy {
		switch i % 17 {
		case 3:
			noisy[i].Value = 99 // a spike
		case 9:
			noisy[i].Value = 5 // a cleanup that did not last
		}
		noisy[i].Value += float64(i%5-2) * 0.3 // jitter
	}
	seasonal := series(week, hour, func(ago float64) float64 { return trend(ago) + 6*math.Sin(2*math.Pi*ago) })
	for name, pts := range map[string][]signals.Point{"noisy": noisy, "seasonal": seasonal} {
		s := one(t, forecastOf(t, pool(70), pts, nil))
		if s.Severity != signals.SeverityWatch || math.Abs(s.Value-15) > 1 || math.Abs(s.Evidence["slope_per_day"].(float64)-2) > 0.15 {
			t.Errorf("%s: %+v", name, s)
		}
	}
	for name, pts := range map[string][]signals.Point{
		"shrinking":         series(week, hour, func(ago float64) float64 { return 90 + ago }),
		"flat":              series(week, hour, func(float64) float64 { return 97 }),
		"five points":       series(48*time.Hour, 12*time.Hour, trend)[:5],
		"six points in 23h": series(23*time.Hour, 4*time.Hour+36*time.Minute, func(ago float64) float64 { return 90 + 30*(1-ago) }),
		"none":              nil,
	} {
		if sigs := forecastOf(t, pool(90), pts, nil); len(sigs) != 0 {
			t.Errorf("%s (%d points): %+v", name, len(pts), sigs)
		}
	}
	// Six points over exactly 24h are enough.
	six := series(24*time.Hour, 24*time.Hour/5, func(ago float64) float64 { return 90 - 10*ago })
	if len(six) != 6 || len(forecastOf(t, pool(90), six, nil)) != 1 {
		t.Errorf("six points over 24h: %d points, %+v", len(six), forecastOf(t, pool(90), six, nil))
	}
	// Points after the snapshot's time are not history.
	future := series(24*time.Hour, 4*time.Hour, func(float64) float64 { return 50 })
	for h := 1; h <= 20; h++ {
		future = append(future, signals.Point{At: takenAt.Add(time.Duration(h) * time.Hour), Value: 50 + 2*float64(h)})
	}
	if sigs := forecastOf(t, pool(50), future, nil); len(sigs) != 0 {
		t.Errorf("future points: %+v", sigs)
	}
}

// TestForecastGuestAndStale: guest disks are forecast too; stopped
// guests and offline storage are not.
func TestForecastGuestAndStale(t *testing.T) {
	pts := series(48*time.Hour, 4*time.Hour, func(ago float64) float64 { return 90 - 5*ago })
	vm := snapshot.Resource{ID: "vm/101", Kind: snapshot.KindVM, Status: "running", Metrics: snapshot.MetricsOf(map[string]float64{"disk_percent": 90})}
	if s := one(t, forecastOf(t, vm, pts, nil)); s.Severity != signals.SeverityWarning || s.Evidence["metric"] != "disk_percent" {
		t.Errorf("guest: %+v", s)
	}
	vm.Status = "stopped"
	off := pool(90)
	off.Status = "offline"
	for _, r := range []snapshot.Resource{vm, off, {ID: "node/n", Kind: snapshot.KindNode, Status: "online"}} {
		if sigs := forecastOf(t, r, pts, nil); len(sigs) != 0 {
			t.Errorf("%s %s: %+v", r.ID, r.Status, sigs)
		}
		if _, ev := signals.Forecast([]snapshot.Resource{r}, map[string][]signals.Point{r.ID: pts}, takenAt, policy(t, alerts.Settings{}), nil); ev[r.ID] {
			t.Errorf("%s %s is evaluated", r.ID, r.Status)
		}
	}
	// A flat series is evaluated (its forecast finding may clear); a short
	// one is not.
	p := pool(90)
	flat := series(48*time.Hour, 4*time.Hour, func(float64) float64 { return 90 })
	short := series(20*time.Hour, 4*time.Hour, func(ago float64) float64 { return 90 - 5*ago })
	_, ev := signals.Forecast([]snapshot.Resource{p}, map[string][]signals.Point{p.ID: flat}, takenAt, policy(t, alerts.Settings{}), nil)
	_, evShort := signals.Forecast([]snapshot.Resource{p}, map[string][]signals.Point{p.ID: short}, takenAt, policy(t, alerts.Settings{}), nil)
	if !ev[p.ID] || evShort[p.ID] || signals.Evaluated(&p, signals.TypeCapacityForecast) {
		t.Errorf("evaluated: flat %v short %v static %v", ev[p.ID], evShort[p.ID], signals.Evaluated(&p, signals.TypeCapacityForecast))
	}
}

// TestSeriesDigestSame: two digests are the same series only when every
// part is the same; the same instants in another zone are the same.
func TestSeriesDigestSame(t *testing.T) {
	d := signals.SeriesDigest{ResourceID: "vm/101", Points: 12, First: takenAt.Add(-48 * time.Hour), Last: takenAt, Version: 41}
	zoned := d
	zoned.First, zoned.Last = d.First.In(time.FixedZone("x", 3600)), d.Last.In(time.FixedZone("x", 3600))
	if !d.Same(d) || !d.Same(zoned) {
		t.Errorf("a digest is not the same as itself (%v) or in another zone (%v)", d.Same(d), d.Same(zoned))
	}
	for name, change := range map[string]func(*signals.SeriesDigest){
		"resource": func(o *signals.SeriesDigest) { o.ResourceID = "vm/102" },
		"points":   func(o *signals.SeriesDigest) { o.Points++ },
		"first":    func(o *signals.SeriesDigest) { o.First = o.First.Add(time.Second) },
		"last":     func(o *signals.SeriesDigest) { o.Last = o.Last.Add(time.Second) },
		"version":  func(o *signals.SeriesDigest) { o.Version++ },
	} {
		o := d
		change(&o)
		if d.Same(o) || o.Same(d) {
			t.Errorf("another %s is the same series", name)
		}
	}
}
