package signals

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/snapshot"
)

// Point is one stored usage sample of a resource: percent used at a time.
type Point = snapshot.UsagePoint

// SeriesDigest is what a stored usage series is: its resource, its
// number of points, its first and newest times, and its version, which
// the history moves with every change to its points and never gives a
// series twice. So a trend fitted to a series (FitTrend) may be kept
// while its digest stays.
type SeriesDigest struct {
	ResourceID  string
	Points      int
	First, Last time.Time
	Version     int64
}

// Same reports whether d and o are the digest of the same series.
func (d SeriesDigest) Same(o SeriesDigest) bool {
	return d.ResourceID == o.ResourceID && d.Points == o.Points && d.First.Equal(o.First) && d.Last.Equal(o.Last) && d.Version == o.Version
}

// UsageSample is one resource's usage (percent used) at a run.
type UsageSample struct {
	ResourceID string
	Value      float64
}

// UsageSamples are the fresh usage values of rs that their series record:
// storage usage_percent and guest disk_percent (the sustained value when
// the snapshot has one), of resources whose metrics are not stale.
func UsageSamples(rs []snapshot.Resource) []UsageSample {
	// Most of a fleet is guests and storage: room for all at once, not
	// a slice grown a dozen times over.
	out := make([]UsageSample, 0, len(rs))
	for i := range rs {
		r := &rs[i]
		m := ForecastMetric(r)
		if m == "" || r.MetricsStale() {
			continue
		}
		if v, _, ok := r.Metric(m); ok {
			out = append(out, UsageSample{ResourceID: r.ID, Value: v})
		}
	}
	return out
}

// Forecast needs at least this much history.
const (
	MinForecastPoints = 6
	MinForecastSpan   = 24 * time.Hour
	// MaxForecastPoints caps the points a trend is fitted to (the newest
	// are kept): Theil-Sen is quadratic in them.
	MaxForecastPoints = 256
)

// ForecastMetric is the usage metric a resource's series records: storage
// usage_percent, guest disk_percent; "" for other kinds.
func ForecastMetric(r *snapshot.Resource) string {
	switch {
	case r.Kind == snapshot.KindStorage:
		return snapshot.MetricUsage
	case r.Kind.Guest():
		return snapshot.MetricDisk
	}
	return ""
}

// Forecast detects capacity_forecast over stored usage series (by
// canonical resource id): for each storage pool and guest disk with fresh
// usage and enough history, a robust trend (Theil-Sen) gives the days
// until it is full. Like Detect it is pure and in snapshot order.
// evaluated holds the ids that had the history to be judged: only there
// is the absence of a signal evidence that the condition cleared.
func Forecast(rs []snapshot.Resource, series map[string][]Point, takenAt time.Time, th Thresholds, active Active) (out []Signal, evaluated map[string]bool) {
	fits := make(map[string]Trend, len(series))
	for id, pts := range series {
		if fit, ok := FitTrend(pts, takenAt); ok {
			fits[id] = fit
		}
	}
	return ForecastTrends(rs, fits, takenAt, th, active)
}

// ForecastTrends is Forecast over trends already fitted (FitTrend), by
// canonical resource id: a resource without one has not the history to
// be judged.
func ForecastTrends(rs []snapshot.Resource, fits map[string]Trend, takenAt time.Time, th Thresholds, active Active) (out []Signal, evaluated map[string]bool) {
	evaluated = map[string]bool{}
	for i := range rs {
		r := &rs[i]
		fit, ok := fits[r.ID]
		if !ok || ForecastMetric(r) == "" || r.MetricsStale() {
			continue
		}
		evaluated[r.ID] = true
		if s, ok := forecast(r, fit, takenAt, th.Resolve(r).Forecast, active); ok {
			out = append(out, s)
		}
	}
	return out, evaluated
}

// forecast applies the days-to-full threshold, which falls: watch at or
// below trigger (30 days), warning at or below critical (7 days), held
// while at or below clear (35 days) once open. A flat or shrinking trend
// is no signal.
func forecast(r *snapshot.Resource, fit Trend, takenAt time.Time, t alerts.Threshold, active Active) (Signal, bool) {
	if t.Trigger <= 0 || fit.perDay <= 0 {
		return Signal{}, false
	}
	now := fit.valueAt(takenAt)
	// Judged to the 0.01 day it is reported in, so an edge is an edge.
	days := round2(max(100-now, 0) / fit.perDay)
	held := false
	switch {
	case days <= t.Trigger:
	//mutate:forecast-hysteresis ./signals ^TestForecastEdges
	case days <= t.Clear && active[Key{Type: TypeCapacityForecast, ResourceID: r.ID}]:
		held = true
	default:
		return Signal{}, false
	}
	severity, threshold := SeverityWatch, t.Trigger
	//mutate:forecast-warning ./signals ^TestForecastEdges
	if t.Critical > 0 && days <= t.Critical {
		severity, threshold = SeverityWarning, t.Critical
	}
	full := takenAt.Add(time.Duration(days * float64(24*time.Hour))).UTC()
	s := newSignal(r, TypeCapacityForecast, severity)
	s.Value, s.Threshold = days, threshold
	s.Evidence = map[string]any{
		"metric": ForecastMetric(r), "method": "theil-sen", "slope_per_day": round2(fit.perDay), "fitted_now": round2(now),
		"days_to_full": days, "projected_full_at": full.Format(time.RFC3339), "points": fit.points,
		"span_hours": round2(fit.span.Hours()), "trigger_days": t.Trigger, "clear_days": t.Clear,
	}
	if t.Critical > 0 {
		s.Evidence["critical_days"] = t.Critical
	}
	g := func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
	s.Summary = fmt.Sprintf("%s %s fills in %s days at +%s points a day (full about %s), within %s days",
		kindWord(r), display(r), g(days), g(fit.perDay), full.Format("2006-01-02"), strconv.FormatFloat(threshold, 'g', -1, 64))
	if held {
		s.Evidence["held_by_hysteresis"] = true
		s.Summary = fmt.Sprintf("%s %s fills in %s days at +%s points a day (full about %s), still within clear %s days",
			kindWord(r), display(r), g(days), g(fit.perDay), full.Format("2006-01-02"), strconv.FormatFloat(t.Clear, 'g', -1, 64))
	}
	return s, true
}

// Trend is a line fitted to a usage series (FitTrend): its slope in
// percentage points a day, its value at the newest point, and the
// history it was fitted to. It depends on the points alone, so a fit
// may be kept until its series changes.
type Trend struct {
	perDay, last float64
	lastAt       time.Time
	points       int
	span         time.Duration
}

// valueAt is the line's value at t.
func (f Trend) valueAt(t time.Time) float64 { return f.last + f.perDay*days(t.Sub(f.lastAt)) }

// days is d in days.
func days(d time.Duration) float64 { return d.Hours() / 24 }

// FitTrend fits a line (Theil-Sen) to the points at or before now. The
// slope is the median of the slopes between every two points, the
// intercept the median of value - slope*time. So a few outliers (a
// spike, a cleanup) move it little. It needs MinForecastPoints distinct
// times over MinForecastSpan. The fit depends on now only through the
// points it drops (after now).
func FitTrend(pts []Point, now time.Time) (Trend, bool) {
	ps := make([]Point, 0, len(pts))
	for _, p := range pts {
		if !p.At.After(now) && !math.IsNaN(p.Value) && !math.IsInf(p.Value, 0) {
			ps = append(ps, p)
		}
	}
	slices.SortFunc(ps, func(a, b Point) int { return a.At.Compare(b.At) })
	ps = slices.CompactFunc(ps, func(a, b Point) bool { return a.At.Equal(b.At) })
	if len(ps) > MaxForecastPoints {
		ps = ps[len(ps)-MaxForecastPoints:]
	}
	//mutate:forecast-min-points ./signals ^TestForecastRobust
	if len(ps) < MinForecastPoints {
		return Trend{}, false
	}
	lastAt := ps[len(ps)-1].At
	span := lastAt.Sub(ps[0].At)
	//mutate:forecast-min-span ./signals ^TestForecastRobust
	if span < MinForecastSpan {
		return Trend{}, false
	}
	slopes := make([]float64, 0, len(ps)*(len(ps)-1)/2)
	for i := range ps {
		for j := i + 1; j < len(ps); j++ {
			slopes = append(slopes, (ps[j].Value-ps[i].Value)/days(ps[j].At.Sub(ps[i].At)))
		}
	}
	slope := median(slopes)
	icepts := make([]float64, len(ps))
	for i, p := range ps {
		icepts[i] = p.Value - slope*days(p.At.Sub(lastAt))
	}
	return Trend{perDay: slope, last: median(icepts), lastAt: lastAt, points: len(ps), span: span}, true
}

// median sorts xs in place and returns its median.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
