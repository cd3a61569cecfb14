package patrol_test

import (
	"context"
	"reflect"
	"slices"
	"testing"

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
