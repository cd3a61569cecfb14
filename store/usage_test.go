package store_test

import (
	"context"
	"fmt"
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

// TestUsageReady: only the resources asked for whose series hold at
// least the points asked for, spanning at least the span asked for, in
// id order. The attack is each near miss: one point short, a span one
// second short, and a ready series not asked for.
func TestUsageReady(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	// series records n points for id, every step, the last at t0 + span.
	series := func(id string, n int, span time.Duration) {
		t.Helper()
		for i := range n {
			at := t0.Add(span * time.Duration(i) / time.Duration(n-1))
			if err := st.RecordUsage(ctx, at, []signals.UsageSample{{ResourceID: id, Value: float64(i)}}, 0, 365*24*time.Hour); err != nil {
				t.Fatal(err)
			}
		}
	}
	series("vm/short", 5, 48*time.Hour)
	series("vm/brief", 6, 24*time.Hour-time.Second)
	series("vm/ready", 6, 24*time.Hour)
	series("storage/pve1/ready", 7, 30*time.Hour)
	series("vm/unasked", 8, 48*time.Hour)
	got, err := st.UsageReady(ctx, []string{"vm/ready", "vm/short", "vm/brief", "storage/pve1/ready", "vm/none"}, 6, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// Each digest is its whole series: count, first and newest time, and
	// the version of its last change (one a point: the history counts
	// from 1, and 5 + 6 points came before vm/ready's).
	want := []signals.SeriesDigest{
		{ResourceID: "storage/pve1/ready", Points: 7, First: t0, Last: t0.Add(30 * time.Hour), Version: 1 + 5 + 6 + 6 + 7},
		{ResourceID: "vm/ready", Points: 6, First: t0, Last: t0.Add(24 * time.Hour), Version: 1 + 5 + 6 + 6},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ready\n%+v\nwant\n%+v", got, want)
	}
	if got, err := st.UsageReady(ctx, nil, 6, 24*time.Hour); err != nil || got != nil {
		t.Errorf("none asked: %+v %v", got, err)
	}
	// The edge of the candidates: the only series, its first point
	// exactly span before the newest point of all.
	st = openStore(t)
	series("vm/edge", 6, 24*time.Hour)
	edge := []signals.SeriesDigest{{ResourceID: "vm/edge", Points: 6, First: t0, Last: t0.Add(24 * time.Hour), Version: 7}}
	if got, err := st.UsageReady(ctx, []string{"vm/edge"}, 6, 24*time.Hour); err != nil || !reflect.DeepEqual(got, edge) {
		t.Errorf("edge: %+v %v", got, err)
	}
}

// TestUsageDigestFollowsEveryChange: the digest UsageReady returns is
// the series as stored (its count, first and newest time, from the
// points themselves) after every kind of change, and each change gives
// the series a version it never had. The attacks are each change behind
// the history's methods: a new point, a prune, a value updated in
// place, a point moved to another series, and a series deleted and
// recorded again point for point.
func TestUsageDigestFollowsEveryChange(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	ids := []string{"vm/a", "vm/b"}
	record := func(at time.Time, v float64) {
		t.Helper()
		samples := []signals.UsageSample{{ResourceID: "vm/a", Value: v}, {ResourceID: "vm/b", Value: v + 1}}
		if err := st.RecordUsage(ctx, at, samples, 0, 10*24*time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := st.DB().ExecContext(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]map[int64]bool{"vm/a": {}, "vm/b": {}}
	// check holds the digests to the stored points and returns them by id.
	check := func(step string) map[string]signals.SeriesDigest {
		t.Helper()
		got, err := st.UsageReady(ctx, ids, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		series, err := st.UsageSeries(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		var want []signals.SeriesDigest
		for _, id := range ids {
			if pts := series[id]; len(pts) > 0 {
				want = append(want, signals.SeriesDigest{ResourceID: id, Points: len(pts), First: pts[0].At, Last: pts[len(pts)-1].At})
			}
		}
		out := map[string]signals.SeriesDigest{}
		for i := range got {
			out[got[i].ResourceID] = got[i]
			if i < len(want) {
				want[i].Version = got[i].Version
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: digests\n%+v\nwant\n%+v", step, got, want)
		}
		return out
	}
	// moved fails unless each id's series has a version it never had.
	moved := func(step string, d map[string]signals.SeriesDigest, moved ...string) {
		t.Helper()
		for _, id := range moved {
			if v := d[id].Version; seen[id][v] {
				t.Errorf("%s: %s has version %d again", step, id, v)
			}
			seen[id][d[id].Version] = true
		}
	}
	for i := range 4 {
		record(t0.Add(time.Duration(i)*24*time.Hour), float64(i))
	}
	moved("recorded", check("recorded"), "vm/a", "vm/b")
	record(t0.Add(4*24*time.Hour), 4) // an insert alone
	moved("a point added", check("a point added"), "vm/a", "vm/b")
	exec("DELETE FROM usage_points WHERE resource_id = 'vm/a' AND at = ?", t0.Unix()) // a delete alone
	moved("a point deleted", check("a point deleted"), "vm/a")
	record(t0.Add(5*24*time.Hour), 5)
	moved("a point added after a delete", check("a point added after a delete"), "vm/a", "vm/b")
	record(t0.Add(13*24*time.Hour), 9) // prunes the points before day 3
	moved("pruned", check("pruned"), "vm/a", "vm/b")
	before := check("before the update")
	exec("UPDATE usage_points SET value = 50 WHERE resource_id = 'vm/a' AND at = ?", t0.Add(13*24*time.Hour).Unix())
	after := check("value updated")
	moved("value updated", after, "vm/a")
	if after["vm/b"] != before["vm/b"] {
		t.Errorf("vm/b moved with vm/a's value: %+v, was %+v", after["vm/b"], before["vm/b"])
	}
	// vm/a's newest point becomes vm/b's newest.
	exec("UPDATE usage_points SET resource_id = 'vm/b', at = at + 60 WHERE resource_id = 'vm/a' AND at = ?", t0.Add(13*24*time.Hour).Unix())
	moved("point moved", check("point moved"), "vm/a", "vm/b")
	exec("DELETE FROM usage_points WHERE resource_id = 'vm/a'")
	if d := check("vm/a deleted"); len(d) != 1 {
		t.Errorf("vm/a deleted: digests %+v", d)
	}
	record(t0.Add(14*24*time.Hour), 1)
	exec("DELETE FROM usage_points WHERE resource_id = 'vm/a'")
	record(t0.Add(14*24*time.Hour), 1) // vm/a as it was, vm/b's point ignored
	moved("recorded again", check("recorded again"), "vm/a")
}

// TestRecordUsageFirstSampleWins: a resource twice in one call gets one
// point, the first; a resource new to the history among ones inside
// their interval gets its point while theirs stay as they were.
func TestRecordUsageFirstSampleWins(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	rec := func(at time.Time, samples ...signals.UsageSample) {
		t.Helper()
		if err := st.RecordUsage(ctx, at, samples, 4*time.Hour, 10*24*time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	rec(t0, signals.UsageSample{ResourceID: "vm/1", Value: 1}, signals.UsageSample{ResourceID: "vm/1", Value: 2},
		signals.UsageSample{ResourceID: "vm/2", Value: 3})
	rec(t0.Add(time.Hour), signals.UsageSample{ResourceID: "vm/2", Value: 4}, signals.UsageSample{ResourceID: "vm/3", Value: 5},
		signals.UsageSample{ResourceID: "vm/1", Value: 6})
	got, err := st.UsageSeries(ctx, []string{"vm/1", "vm/2", "vm/3"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]signals.Point{
		"vm/1": {{At: t0, Value: 1}},
		"vm/2": {{At: t0, Value: 3}},
		"vm/3": {{At: t0.Add(time.Hour), Value: 5}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("series\n%+v\nwant\n%+v", got, want)
	}
}

// BenchmarkUsageSteadyRun is the forecast's history work in a steady run
// of a 100k fleet (85k storage pools and guests, each with one point
// inside the interval): record, find the ready series, read them.
func BenchmarkUsageSteadyRun(b *testing.B) {
	st := openStore(b)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	samples := make([]signals.UsageSample, 85_000)
	ids := make([]string, len(samples))
	for i := range samples {
		ids[i] = fmt.Sprintf("vm/%d", 100+i)
		samples[i] = signals.UsageSample{ResourceID: ids[i], Value: float64(i % 100)}
	}
	if err := st.RecordUsage(ctx, t0, samples, 4*time.Hour, 30*24*time.Hour); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := st.RecordUsage(ctx, t0.Add(time.Minute), samples, 4*time.Hour, 30*24*time.Hour); err != nil {
			b.Fatal(err)
		}
		ready, err := st.UsageReady(ctx, ids, signals.MinForecastPoints, signals.MinForecastSpan)
		if err != nil || len(ready) != 0 {
			b.Fatalf("ready %d %v", len(ready), err)
		}
		if _, err := st.UsageSeries(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
}
