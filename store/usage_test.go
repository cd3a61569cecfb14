package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/patrold/patrold/signals"
)

// TestUsageSeries: a compact series per resource on a real database: at
// most one point per interval, none past the retention, read back in
// time order for the resources asked.
func TestUsageSeries(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if has, err := st.HasUsage(ctx); err != nil || has {
		t.Fatalf("new store has usage: %v %v", has, err)
	}
	rec := func(at time.Time, samples ...signals.UsageSample) {
		t.Helper()
		if err := st.RecordUsage(ctx, at, samples, 4*time.Hour, 10*24*time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	a := func(v float64) signals.UsageSample {
		return signals.UsageSample{ResourceID: "storage/pve1/a", Value: v}
	}
	b := func(v float64) signals.UsageSample { return signals.UsageSample{ResourceID: "vm/101", Value: v} }
	rec(t0, a(10), b(50))
	rec(t0.Add(time.Hour), a(11))          // inside the interval: dropped
	rec(t0.Add(4*time.Hour), a(12), b(51)) // exactly one interval later: kept
	rec(t0.Add(4*time.Hour+time.Minute), a(99))
	rec(t0.Add(8*time.Hour), b(52))
	got, err := st.UsageSeries(ctx, []string{"storage/pve1/a", "vm/101", "vm/999"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]signals.Point{
		"storage/pve1/a": {{At: t0, Value: 10}, {At: t0.Add(4 * time.Hour), Value: 12}},
		"vm/101":         {{At: t0, Value: 50}, {At: t0.Add(4 * time.Hour), Value: 51}, {At: t0.Add(8 * time.Hour), Value: 52}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("series\n%+v\nwant\n%+v", got, want)
	}
	if only, _ := st.UsageSeries(ctx, []string{"vm/101"}); len(only) != 1 || len(only["vm/101"]) != 3 {
		t.Errorf("asked for vm/101: %+v", only)
	}
	// Ten days and four hours on, the first points are past the retention.
	rec(t0.Add(10*24*time.Hour+4*time.Hour), a(20))
	got, _ = st.UsageSeries(ctx, []string{"storage/pve1/a", "vm/101"})
	want = map[string][]signals.Point{
		"storage/pve1/a": {{At: t0.Add(4 * time.Hour), Value: 12}, {At: t0.Add(10*24*time.Hour + 4*time.Hour), Value: 20}},
		"vm/101":         {{At: t0.Add(4 * time.Hour), Value: 51}, {At: t0.Add(8 * time.Hour), Value: 52}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after retention\n%+v\nwant\n%+v", got, want)
	}
	if has, err := st.HasUsage(ctx); err != nil || !has {
		t.Fatalf("HasUsage = %v %v", has, err)
	}
}
