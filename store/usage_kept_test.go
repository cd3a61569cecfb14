package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/store"
)

// usagePoints is every stored usage point, as "resource at value" lines
// in key order.
func usagePoints(t testing.TB, st *store.Store) []string {
	t.Helper()
	rows, err := st.DB().Query("SELECT resource_id, at, value FROM usage_points ORDER BY resource_id, at")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		var at int64
		var v float64
		if err := rows.Scan(&id, &at, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %d %g", id, at, v))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func usageSamples(v float64, ids ...string) []signals.UsageSample {
	out := make([]signals.UsageSample, len(ids))
	for i, id := range ids {
		out[i] = signals.UsageSample{ResourceID: id, Value: v}
	}
	return out
}

// TestRecordUsageKeepsNewestPoints: a daemon's steady runs sample the same
// resources, and only the first call reads their newest points; a call
// that samples other resources (or the same in another order) reads them
// again. What is stored is what the rule says throughout.
func TestRecordUsageKeepsNewestPoints(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	rec := func(at time.Time, samples []signals.UsageSample) {
		t.Helper()
		if err := st.RecordUsage(ctx, at, samples, 4*time.Hour, 10*24*time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	fleet := []string{"vm/1", "vm/2", "storage/pve1/a"}
	rec(t0, usageSamples(1, fleet...))
	rec(t0.Add(time.Hour), usageSamples(2, fleet...))   // inside the interval
	rec(t0.Add(4*time.Hour), usageSamples(3, fleet...)) // due: the kept newest point moved
	rec(t0.Add(5*time.Hour), usageSamples(4, fleet...)) // inside the new interval
	if n := st.UsageReads(); n != 1 {
		t.Errorf("steady calls read the newest points %d times, want 1", n)
	}
	// The same count of resources, another set, then the same in another
	// order: each reads again. vm/3 is new (due); the others are not due
	// at 6h and due at 8h.
	rec(t0.Add(6*time.Hour), usageSamples(5, "vm/1", "vm/2", "vm/3"))
	rec(t0.Add(8*time.Hour), usageSamples(6, "vm/3", "vm/2", "vm/1"))
	if n := st.UsageReads(); n != 3 {
		t.Errorf("calls over other samples: %d reads, want 3", n)
	}
	t1, t4, t6, t8 := t0.Unix(), t0.Add(4*time.Hour).Unix(), t0.Add(6*time.Hour).Unix(), t0.Add(8*time.Hour).Unix()
	want := []string{
		fmt.Sprintf("storage/pve1/a %d 1", t1), fmt.Sprintf("storage/pve1/a %d 3", t4),
		fmt.Sprintf("vm/1 %d 1", t1), fmt.Sprintf("vm/1 %d 3", t4), fmt.Sprintf("vm/1 %d 6", t8),
		fmt.Sprintf("vm/2 %d 1", t1), fmt.Sprintf("vm/2 %d 3", t4), fmt.Sprintf("vm/2 %d 6", t8),
		fmt.Sprintf("vm/3 %d 5", t6),
	}
	if got := usagePoints(t, st); !reflect.DeepEqual(got, want) {
		t.Errorf("points\n%q\nwant\n%q", got, want)
	}
}

// TestRecordUsageKeptForgetsAPrunedSeries: with a retention shorter than
// the interval, a call can prune a series' only point while it records
// none. The series is gone, so the next call records a point for it; a
// kept newest point that still named the pruned one would call it not
// due.
func TestRecordUsageKeptForgetsAPrunedSeries(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, h := range []int{0, 2, 3} {
		if err := st.RecordUsage(ctx, t0.Add(time.Duration(h)*time.Hour), usageSamples(float64(h), "vm/1"), 4*time.Hour, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	// 0h: recorded. 2h: not due, and the 0h point is pruned. 3h: due.
	if got, want := usagePoints(t, st), []string{fmt.Sprintf("vm/1 %d 3", t0.Add(3*time.Hour).Unix())}; !reflect.DeepEqual(got, want) {
		t.Errorf("points %q, want %q", got, want)
	}
}

// TestRecordUsageKeptSeesOtherWrites is the attack on the kept newest
// points: between two calls over the same samples another writer deletes
// one series' newest point (it is due again) and another process records
// a point of another (it is not due any more). The next call sees both.
func TestRecordUsageKeptSeesOtherWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.db")
	st, other := openAt(t, path), openAt(t, path)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	fleet := []string{"vm/1", "vm/2"}
	if err := st.RecordUsage(ctx, t0, usageSamples(1, fleet...), 4*time.Hour, 10*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := other.DB().Exec("DELETE FROM usage_points WHERE resource_id = 'vm/1'"); err != nil {
		t.Fatal(err)
	}
	if err := other.RecordUsage(ctx, t0.Add(3*time.Hour), usageSamples(7, "vm/2"), 0, 10*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordUsage(ctx, t0.Add(4*time.Hour), usageSamples(2, fleet...), 4*time.Hour, 10*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("vm/1 %d 2", t0.Add(4*time.Hour).Unix()),
		fmt.Sprintf("vm/2 %d 1", t0.Unix()), fmt.Sprintf("vm/2 %d 7", t0.Add(3*time.Hour).Unix()),
	}
	if got := usagePoints(t, st); !reflect.DeepEqual(got, want) {
		t.Errorf("points\n%q\nwant\n%q", got, want)
	}
	if n := st.UsageReads(); n != 2 {
		t.Errorf("reads %d, want 2 (the other writes moved the version)", n)
	}
}

// TestRecordUsageKeptMatchesReading holds a store that keeps the newest
// points to one that reads them in every call, over random calls (fleets
// that change, duplicates, intervals and retentions of either order) and
// writes of other writers.
func TestRecordUsageKeptMatchesReading(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		dir := t.TempDir()
		open := func(name string) *store.Store {
			st, err := store.Open(context.Background(), filepath.Join(dir, name))
			if err != nil {
				rt.Fatal(err)
			}
			return st
		}
		kept, read := open("kept.db"), open("read.db")
		defer kept.Close()
		defer read.Close()
		ctx := context.Background()
		at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		ids := []string{"vm/1", "vm/2", "vm/3", "storage/pve1/a"}
		fleet := rapid.SliceOfN(rapid.SampledFrom(ids), 1, 5).Draw(rt, "fleet")
		for call := range rapid.IntRange(1, 12).Draw(rt, "calls") {
			at = at.Add(time.Duration(rapid.IntRange(0, 6).Draw(rt, "hours")) * time.Hour)
			if rapid.IntRange(0, 3).Draw(rt, "new fleet") == 0 {
				fleet = rapid.SliceOfN(rapid.SampledFrom(ids), 1, 5).Draw(rt, "fleet")
			}
			switch rapid.IntRange(0, 4).Draw(rt, "other writer") {
			case 0:
				q := "DELETE FROM usage_points WHERE (resource_id, at) IN (SELECT resource_id, max(at) FROM usage_points WHERE resource_id = ?)"
				id := rapid.SampledFrom(ids).Draw(rt, "deleted")
				for _, st := range []*store.Store{kept, read} {
					if _, err := st.DB().Exec(q, id); err != nil {
						rt.Fatal(err)
					}
				}
			case 1:
				id := rapid.SampledFrom(ids).Draw(rt, "inserted")
				for _, st := range []*store.Store{kept, read} {
					if _, err := st.DB().Exec("INSERT OR IGNORE INTO usage_points (resource_id, at, value) VALUES (?, ?, 9)", id, at.Add(-time.Hour).Unix()); err != nil {
						rt.Fatal(err)
					}
				}
			}
			interval := time.Duration(rapid.SampledFrom([]int{0, 2, 4}).Draw(rt, "interval")) * time.Hour
			retention := time.Duration(rapid.SampledFrom([]int{1, 3, 12}).Draw(rt, "retention")) * time.Hour
			samples := usageSamples(float64(call), fleet...)
			read.DropUsageKept()
			for _, st := range []*store.Store{kept, read} {
				if err := st.RecordUsage(ctx, at, samples, interval, retention); err != nil {
					rt.Fatal(err)
				}
			}
			if a, b := usagePoints(t, kept), usagePoints(t, read); !reflect.DeepEqual(a, b) {
				rt.Fatalf("call %d at %s: kept\n%q\nread\n%q", call, at, a, b)
			}
		}
	})
}
