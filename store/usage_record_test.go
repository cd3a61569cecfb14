package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

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

// TestRecordUsageKeepsTheInterval: steady runs sample the same
// resources, then other resources and the same in another order. What is
// stored is what the interval rule says throughout.
func TestRecordUsageKeepsTheInterval(t *testing.T) {
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
	// The same count of resources, another set, then the same in another
	// order. vm/3 is new (due); the others are not due at 6h and due at 8h.
	rec(t0.Add(6*time.Hour), usageSamples(5, "vm/1", "vm/2", "vm/3"))
	rec(t0.Add(8*time.Hour), usageSamples(6, "vm/3", "vm/2", "vm/1"))
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

// TestRecordUsageForgetsAPrunedSeries: with a retention shorter than
// the interval, a call can prune a series' only point while it records
// none. The series is gone, so the next call records a point for it.
func TestRecordUsageForgetsAPrunedSeries(t *testing.T) {
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

// TestRecordUsageSeesOtherWrites: between two calls over the same
// samples another writer deletes one series' newest point (it is due
// again) and another process records a point of another (it is not due
// any more). The next call sees both.
func TestRecordUsageSeesOtherWrites(t *testing.T) {
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
}
