package patrol

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/store"
)

// BenchmarkForecastMature is the forecast of a steady run over a mature
// history. The history is 5k storage pools, each with a month of points
// (180, one every UsageInterval), no point due. The kept case is the
// daemon's steady run (the last run's fits kept). The refit case fits
// every series again, as a run with no kept fits does (the first run of
// a process).
func BenchmarkForecastMature(b *testing.B) {
	const n = 5000
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(b.TempDir(), "patrold.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	rs := make([]snapshot.Resource, n)
	samples := make([]signals.UsageSample, n)
	for i := range rs {
		rs[i] = snapshot.Resource{ID: fmt.Sprintf("storage/pve%d/pool", i), Kind: snapshot.KindStorage, Status: "online",
			Metrics: snapshot.MetricsOf(map[string]float64{"usage_percent": 50})}
	}
	const points = int(UsageRetention / UsageInterval)
	for p := range points {
		at := now.Add(-time.Duration(points-1-p) * UsageInterval)
		for i := range samples {
			samples[i] = signals.UsageSample{ResourceID: rs[i].ID, Value: 20 + float64(p)*0.2 + float64(i%7)}
		}
		if err := st.RecordUsage(ctx, at, samples, 0, UsageRetention); err != nil {
			b.Fatal(err)
		}
	}
	pol, err := alerts.New(alerts.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	snap := &snapshot.Snapshot{Version: 1, TakenAt: now, Resources: rs}
	for _, keep := range []bool{true, false} {
		b.Run(map[bool]string{true: "kept", false: "refit"}[keep], func(b *testing.B) {
			r := &Runner{opts: Options{History: st}}
			run := func() {
				if !keep {
					r.fits = nil
				}
				_, evaluated, err := r.forecast(ctx, Settings{Policy: pol}, snap, false, nil)
				if err != nil || len(evaluated) != n {
					b.Fatalf("%d evaluated, %v", len(evaluated), err)
				}
			}
			run() // the first run fits every series
			for b.Loop() {
				run()
			}
		})
	}
}
