package patrol_test

import (
	"context"
	"reflect"
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

// askedHistory is a store that notes the series a run asks for.
type askedHistory struct {
	*store.Store
	asked [][]string
}

func (h *askedHistory) UsageSeries(ctx context.Context, ids []string) (map[string][]signals.Point, error) {
	h.asked = append(h.asked, slices.Clone(ids))
	return h.Store.UsageSeries(ctx, ids)
}

// TestForecastReadsOnlyReadySeries: a run reads the series of the
// storage pools and guests whose history can be judged (at least
// signals.MinForecastPoints points over signals.MinForecastSpan), no
// others. The expectation is derived from every stored series after the
// run; the attack is reading every sampled resource's series, which
// this fleet (most resources with one point) tells apart.
func TestForecastReadsOnlyReadySeries(t *testing.T) {
	st, src, now := forecastFleet(t)
	hist := &askedHistory{Store: st}
	runner := forecastRunner(t, st, src, now, hist)
	rep, err := runner.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	snap, _, err := src.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var sampled []string
	for _, s := range signals.UsageSamples(snap.Resources) {
		sampled = append(sampled, s.ResourceID)
	}
	stored, err := st.UsageSeries(context.Background(), sampled)
	if err != nil {
		t.Fatal(err)
	}
	var ready []string
	for id, pts := range stored {
		if len(pts) >= signals.MinForecastPoints && pts[len(pts)-1].At.Sub(pts[0].At) >= signals.MinForecastSpan {
			ready = append(ready, id)
		}
	}
	slices.Sort(ready)
	if len(ready) == 0 || len(ready) == len(sampled) {
		t.Fatalf("%d of %d sampled resources ready: the fleet does not tell the read apart", len(ready), len(sampled))
	}
	if want := [][]string{ready}; !reflect.DeepEqual(hist.asked, want) {
		t.Errorf("series asked for %q, want %q", hist.asked, want)
	}
	if !slices.ContainsFunc(rep.Signals, func(s signals.Signal) bool {
		return s.Type == signals.TypeCapacityForecast && s.ResourceID == demo.ShowcaseFilling
	}) {
		t.Errorf("no capacity_forecast on %s", demo.ShowcaseFilling)
	}
}

// TestForecastKeepsFitsUntilTheSeriesChanges: a run refits (and reads)
// only the series that changed since the last run's fit, and its
// forecast is the one fitted from every stored point. The attacks, each
// behind the runner's back:
//   - a point added to one series inside the interval (the kept fit is
//     stale: that series alone is read again);
//   - a point after the next run's snapshot (left out of that fit, so
//     the fit is not kept: the run after, which includes the point,
//     refits);
//   - the clock set back (the series is the same, but the fit must leave
//     out its points after the snapshot).
func TestForecastKeepsFitsUntilTheSeriesChanges(t *testing.T) {
	st, src, now := forecastFleet(t)
	hist := &askedHistory{Store: st}
	runner := forecastRunner(t, st, src, now, hist)
	ctx := context.Background()
	pol, _ := alerts.New(alerts.Settings{})
	// run runs at the clock moved by d and returns the series it read and
	// its forecast signals, which must be what a fit of every stored
	// point gives.
	run := func(d time.Duration) [][]string {
		t.Helper()
		*now = now.Add(d)
		hist.asked = nil
		before, err := st.Active(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := runner.Run(ctx, patrol.TriggerManual, patrol.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		snap, _, err := src.Collect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var sampled []string
		for _, s := range signals.UsageSamples(snap.Resources) {
			sampled = append(sampled, s.ResourceID)
		}
		stored, err := st.UsageSeries(ctx, sampled)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := signals.Forecast(snap.Resources, stored, snap.TakenAt, pol, hysteresisOf(before))
		var got []signals.Signal
		for _, s := range rep.Signals {
			if s.Type == signals.TypeCapacityForecast {
				got = append(got, s)
			}
		}
		if len(want) == 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("at %s forecast\n%+v\nwant\n%+v", now.Format(time.RFC3339), got, want)
		}
		return hist.asked
	}
	if asked := run(0); len(asked) != 1 || !slices.Contains(asked[0], demo.ShowcaseFilling) {
		t.Fatalf("first run read %q", asked)
	}
	if asked := run(time.Minute); !reflect.DeepEqual(asked, [][]string{nil}) {
		t.Errorf("steady run read %q, want nothing", asked)
	}
	record := func(at time.Time, v float64) {
		t.Helper()
		if err := st.RecordUsage(ctx, at, []signals.UsageSample{{ResourceID: demo.ShowcaseFilling, Value: v}}, 0, patrol.UsageRetention); err != nil {
			t.Fatal(err)
		}
	}
	record(now.Add(30*time.Second), 97)
	if asked := run(time.Minute); !reflect.DeepEqual(asked, [][]string{{demo.ShowcaseFilling}}) {
		t.Errorf("after a point was added the run read %q, want %s", asked, demo.ShowcaseFilling)
	}
	record(now.Add(2*time.Minute), 99)
	if asked := run(time.Minute); !reflect.DeepEqual(asked, [][]string{{demo.ShowcaseFilling}}) {
		t.Errorf("with a point after the snapshot the run read %q, want %s", asked, demo.ShowcaseFilling)
	}
	if asked := run(2 * time.Minute); !reflect.DeepEqual(asked, [][]string{{demo.ShowcaseFilling}}) {
		t.Errorf("once the point is inside the snapshot the run read %q, want %s", asked, demo.ShowcaseFilling)
	}
	// A clock set back: the same series, but its newest points are after
	// the snapshot, so every ready series is fitted again without them.
	if asked := run(-6 * time.Hour); len(asked) != 1 || !slices.Contains(asked[0], demo.ShowcaseFilling) {
		t.Errorf("with the clock set back the run read %q", asked)
	}
}

// hysteresisOf is the hysteresis input of a run over the active findings:
// each finding's key as a signal key.
func hysteresisOf(active []findings.Finding) signals.Active {
	out := signals.Active{}
	for _, f := range active {
		if typ, ok := signals.Covering(f.Key, string(f.Category)); ok {
			out[signals.Key{Type: typ, ResourceID: f.ResourceID}] = true
		}
	}
	return out
}
