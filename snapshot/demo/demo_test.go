package demo_test

import (
	"context"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/demo"
)

func TestGenerateIsValidSizedAndSeeded(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, n := range []int{1, 7, 40, 1000} {
		o := demo.Options{Seed: 3, Resources: n, FaultRate: 0.2, ChangeEvery: 10 * time.Minute}
		s := demo.Generate(o, at)
		if len(s.Resources) != n {
			t.Fatalf("n=%d: got %d resources", n, len(s.Resources))
		}
		data, err := snapshot.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		back, probs, err := snapshot.Decode(data, snapshot.DecodeOptions{Strict: true})
		if err != nil || len(probs) != 0 || len(back.Resources) != n {
			t.Fatalf("n=%d: generated fleet does not validate: %v %v", n, err, probs)
		}
		again, _ := snapshot.Encode(demo.Generate(o, at))
		if string(again) != string(data) {
			t.Fatalf("n=%d: same seed and time gave a different fleet", n)
		}
	}
}

func TestFaultsComeAndGo(t *testing.T) {
	pol, _ := alerts.New(alerts.Settings{})
	o := demo.Options{Seed: 1, Resources: 400, FaultRate: 0.1, ChangeEvery: 10 * time.Minute}
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	keys := func(at time.Time) map[signals.Key]bool {
		out := map[signals.Key]bool{}
		for _, s := range signals.Detect(demo.Generate(o, at), pol, nil) {
			out[s.Key()] = true
		}
		return out
	}
	a, b := keys(at), keys(at.Add(10*time.Minute))
	if len(a) == 0 || len(b) == 0 {
		t.Fatalf("no faults: %d %d", len(a), len(b))
	}
	gone, came := 0, 0
	for k := range a {
		if !b[k] {
			gone++
		}
	}
	for k := range b {
		if !a[k] {
			came++
		}
	}
	if gone == 0 || came == 0 {
		t.Fatalf("faults did not change between epochs: gone %d came %d", gone, came)
	}
	types := map[signals.Type]bool{}
	for k := range a {
		types[k.Type] = true
	}
	for k := range b {
		types[k.Type] = true
	}
	if len(types) < 6 {
		t.Errorf("demo fleet covers only %d signal types: %v", len(types), types)
	}
	if zero := keys2(pol, demo.Options{Seed: 1, Resources: 400, FaultRate: 0}, at); zero != 0 {
		t.Errorf("fault rate 0 produced %d signals", zero)
	}
}

func keys2(pol *alerts.Policy, o demo.Options, at time.Time) int {
	return len(signals.Detect(demo.Generate(o, at), pol, nil))
}

// TestShowcase: the default demo source shows every kind the Proxmox
// operator asks about within two consecutive epochs, the forecast over
// the history BackfillUsage gives.
func TestShowcase(t *testing.T) {
	pol, _ := alerts.New(alerts.Settings{})
	o := demo.Options{Seed: demo.DefaultSeed, Resources: demo.DefaultResources, FaultRate: demo.DefaultFaultRate, ChangeEvery: 2 * time.Minute}
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	src, err := demo.New(o, func() time.Time { return at })
	if err != nil {
		t.Fatal(err)
	}
	seen := map[signals.Type]bool{}
	for _, when := range []time.Time{at, at.Add(2 * time.Minute)} {
		now := when
		src, _ := demo.New(o, func() time.Time { return now })
		snap, _, _ := src.Collect(context.Background())
		for _, s := range signals.Detect(snap, pol, nil) {
			seen[s.Type] = true
		}
		hist := src.BackfillUsage(when)
		series := map[string][]signals.Point{}
		for id, pts := range hist {
			series[id] = pts
		}
		fc, _ := signals.Forecast(snap.Resources, series, snap.TakenAt, pol, nil)
		for _, s := range fc {
			seen[s.Type] = true
			if s.ResourceID != demo.ShowcaseFilling {
				t.Errorf("forecast on %s", s.ResourceID)
			}
		}
	}
	for _, typ := range []signals.Type{signals.TypeNodeOffline, signals.TypeDiskTemperature, signals.TypeDiskWear,
		signals.TypeSmartFailure, signals.TypeZFSPoolDegraded, signals.TypeCapacityForecast, signals.TypeBackupJobFailed} {
		if !seen[typ] {
			t.Errorf("no %s in two epochs: %v", typ, seen)
		}
	}
	if got := src.BackfillUsage(at)[demo.ShowcaseFilling]; len(got) != 12 || !got[len(got)-1].At.Before(at) {
		t.Errorf("backfill %+v", got)
	}
}

// TestGenerateHasNoShowcase: Generate (benchmarks, demo export, the
// evaluation corpus) is the rolled fleet alone.
func TestGenerateHasNoShowcase(t *testing.T) {
	pol, _ := alerts.New(alerts.Settings{})
	o := demo.Options{Seed: demo.DefaultSeed, Resources: demo.DefaultResources, FaultRate: 0.0001, ChangeEvery: 2 * time.Minute}
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, when := range []time.Time{at, at.Add(2 * time.Minute)} {
		if sigs := signals.Detect(demo.Generate(o, when), pol, nil); len(sigs) != 0 {
			t.Errorf("%s: %+v", when, sigs)
		}
	}
}
