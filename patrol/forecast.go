package patrol

import (
	"context"
	"slices"
	"time"

	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// UsageHistory is the per-resource usage history (store.Store).
type UsageHistory interface {
	RecordUsage(ctx context.Context, at time.Time, samples []signals.UsageSample, interval, retention time.Duration) error
	UsageReady(ctx context.Context, ids []string, points int, span time.Duration) ([]signals.SeriesDigest, error)
	UsageSeries(ctx context.Context, ids []string) (map[string][]signals.Point, error)
	HasUsage(ctx context.Context) (bool, error)
}

// Usage history sampling (docs/PATROL_ARCHITECTURE.md#capacity-forecast).
const (
	UsageInterval  = 4 * time.Hour
	UsageRetention = 30 * 24 * time.Hour
)

// forecast records this run's usage (for a snapshot the source collected;
// a replayed or given one is not history) and returns capacity_forecast
// over the stored series, with the resources it evaluated (only their
// forecast findings may clear by absence).
func (r *Runner) forecast(ctx context.Context, set Settings, snap *snapshot.Snapshot, collected bool, active signals.Active) ([]signals.Signal, map[string]bool, error) {
	h := r.opts.History
	samples := signals.UsageSamples(snap.Resources)
	if len(samples) == 0 {
		return nil, nil, nil
	}
	if collected {
		if err := backfill(ctx, h, set.Source, snap.TakenAt); err != nil {
			return nil, nil, err
		}
		if err := h.RecordUsage(ctx, snap.TakenAt, samples, UsageInterval, UsageRetention); err != nil {
			return nil, nil, err
		}
	}
	ids := make([]string, len(samples))
	for i, s := range samples {
		ids[i] = s.ResourceID
	}
	// Only a series with the history to be judged is read: a fleet whose
	// history is young reads next to nothing.
	ready, err := h.UsageReady(ctx, ids, signals.MinForecastPoints, signals.MinForecastSpan)
	if err != nil {
		return nil, nil, err
	}
	var read []string
	for _, d := range ready {
		if _, ok := r.keptFit(d, snap.TakenAt); !ok {
			read = append(read, d.ResourceID)
		}
	}
	series, err := h.UsageSeries(ctx, read)
	if err != nil {
		return nil, nil, err
	}
	fits := make(map[string]signals.Trend, len(ready))
	kept := make(map[string]fitted, len(ready))
	for _, d := range ready {
		f, ok := r.keptFit(d, snap.TakenAt)
		if !ok {
			f.digest = d
			f.trend, f.ok = signals.FitTrend(series[d.ResourceID], snap.TakenAt)
		}
		if f.ok {
			fits[d.ResourceID] = f.trend
		}
		// A fit that left out points after the snapshot is not kept.
		if !d.Last.After(snap.TakenAt) {
			kept[d.ResourceID] = f
		}
	}
	r.fits = kept
	sigs, evaluated := signals.ForecastTrends(snap.Resources, fits, snap.TakenAt, set.Policy, active)
	return sigs, evaluated, nil
}

// fitted is a trend fitted to a stored series (ok false when the series
// could not be fitted), with the digest of that series.
type fitted struct {
	digest signals.SeriesDigest
	trend  signals.Trend
	ok     bool
}

// keptFit is the fit the last run kept for the series of digest d, when
// it is still the fit at now:
//   - the series is the same (its digest did not change);
//   - no point of it is after now (the fit was made with all of them).
//
// A Theil-Sen fit is quadratic in the points (16k slopes for a month of
// points), so a steady run refits only the series that changed.
func (r *Runner) keptFit(d signals.SeriesDigest, now time.Time) (fitted, bool) {
	f, ok := r.fits[d.ResourceID]
	if !ok || !f.digest.Same(d) || d.Last.After(now) {
		return fitted{}, false
	}
	return f, true
}

// backfill records a backfilling source's past usage into an empty
// history, oldest first.
func backfill(ctx context.Context, h UsageHistory, src snapshot.Source, now time.Time) error {
	bf, ok := src.(snapshot.UsageBackfiller)
	if !ok {
		return nil
	}
	if has, err := h.HasUsage(ctx); err != nil || has {
		return err
	}
	byTime := map[time.Time][]signals.UsageSample{}
	for id, pts := range bf.BackfillUsage(now) {
		for _, p := range pts {
			if p.At.Before(now) {
				byTime[p.At] = append(byTime[p.At], signals.UsageSample{ResourceID: id, Value: p.Value})
			}
		}
	}
	times := make([]time.Time, 0, len(byTime))
	for t := range byTime {
		times = append(times, t)
	}
	slices.SortFunc(times, time.Time.Compare)
	for _, t := range times {
		if err := h.RecordUsage(ctx, t, byTime[t], 0, UsageRetention); err != nil {
			return err
		}
	}
	return nil
}
