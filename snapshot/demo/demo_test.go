package demo_test

import (
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
