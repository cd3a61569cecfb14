package signals_test

import (
	"reflect"
	"testing"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/demo"
)

// TestDetectInSharesIsOnePass: a fleet large enough to be detected in
// shares gives exactly the signals, in the same order, that detecting
// each resource alone and joining the results gives, hysteresis included.
func TestDetectInSharesIsOnePass(t *testing.T) {
	snap := demo.Generate(demo.Options{Seed: 7, Resources: 20_000, FaultRate: 0.2}, takenAt)
	pol := policy(t, alerts.Settings{})
	active := signals.Active{}
	for i := range snap.Resources {
		if i%3 == 0 {
			id := snap.Resources[i].ID
			active[signals.Key{Type: signals.TypeHighCPU, ResourceID: id}] = true
			active[signals.Key{Type: signals.TypeHighDisk, ResourceID: id}] = true
		}
	}
	var want []signals.Signal
	for i := range snap.Resources {
		one := snapshot.Snapshot{Version: snap.Version, TakenAt: snap.TakenAt, Resources: snap.Resources[i : i+1]}
		want = append(want, signals.Detect(&one, pol, active)...)
	}
	got := signals.Detect(snap, pol, active)
	if len(want) < 1000 {
		t.Fatalf("fleet too healthy for the test: %d signals", len(want))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("detected in shares: %d signals, one by one: %d (first difference at %d)", len(got), len(want), firstDiff(got, want))
	}
}

func firstDiff(a, b []signals.Signal) int {
	for i := range min(len(a), len(b)) {
		if !reflect.DeepEqual(a[i], b[i]) {
			return i
		}
	}
	return min(len(a), len(b))
}
