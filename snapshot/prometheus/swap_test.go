package prometheus

import (
	"reflect"
	"testing"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// TestRecordedSwapAndIOWait: node_exporter's swap and IO wait reach the
// node's metrics (a NaN is left out), and the net judges them with the
// default thresholds: swap 85.5 % is above 80, IO wait averaged over the
// window (12.25 %) above 10; pve3's 3 % and 1.5 % are not.
func TestRecordedSwapAndIOWait(t *testing.T) {
	_, srv := newRecorded(t)
	snap, problems, err := collect(t, Options{URL: srv.URL})
	if err != nil || len(problems) != 0 {
		t.Fatalf("err %v problems %v", err, problems)
	}
	res := byID(snap)
	pick := func(id string) map[string]float64 {
		out := map[string]float64{}
		for _, name := range []string{snapshot.MetricSwap, snapshot.MetricIOWait, snapshot.MetricIOWait + "_avg"} {
			if v, ok := res[id].Metrics.Get(name); ok {
				out[name] = v
			}
		}
		return out
	}
	if got, want := pick("node/pve1"), map[string]float64{"swap_percent": 85.5, "iowait_percent": 14.5, "iowait_percent_avg": 12.25}; !reflect.DeepEqual(got, want) {
		t.Errorf("node/pve1 swap and iowait: %v, want %v", got, want)
	}
	if got, want := pick("node/pve3"), map[string]float64{"swap_percent": 3, "iowait_percent_avg": 1.5}; !reflect.DeepEqual(got, want) {
		t.Errorf("node/pve3 swap and iowait (NaN left out): %v, want %v", got, want)
	}
	pol, err := alerts.New(alerts.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	type judged struct {
		Type               signals.Type
		Resource, Severity string
		Value, Threshold   float64
	}
	var got []judged
	for _, s := range signals.Detect(snap, pol, nil) {
		if s.Type == signals.TypeHighSwap || s.Type == signals.TypeHighIOWait {
			got = append(got, judged{s.Type, s.ResourceID, s.Severity, s.Value, s.Threshold})
		}
	}
	want := []judged{
		{signals.TypeHighSwap, "node/pve1", "warning", 85.5, alerts.DefaultNodeSwap},
		{signals.TypeHighIOWait, "node/pve1", "warning", 12.25, alerts.DefaultNodeIOWait},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("signals:\n got %+v\nwant %+v", got, want)
	}
}
