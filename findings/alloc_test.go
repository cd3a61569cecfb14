package findings_test

import (
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
)

// BenchmarkID is the finding id of a typical resource, category and key.
func BenchmarkID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = findings.ID("vm/pve1/100-web-frontend", findings.CategoryCapacity, "high_disk")
	}
}

// BenchmarkDecideSteady is a steady run's decision on an unchanged
// finding whose transitions are all inside the flap window.
func BenchmarkDecideSteady(b *testing.B) {
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	pub := now.Add(-time.Hour)
	f := findings.Finding{ID: "x", Severity: findings.SeverityWarning,
		DetectedAt: now.Add(-2 * time.Hour), LastSeenAt: now,
		Transitions: []time.Time{now.Add(-2 * time.Hour)}}
	f.LastPublishedAt, f.LastPublishedSeverity = &pub, findings.SeverityWarning
	c := findings.Change{Kind: findings.ChangeUnchanged, Finding: f}
	p := findings.DefaultPublishPolicy()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = p.Decide(c, false, now)
	}
}

// TestDecideLeavesTheTransitionsArray: Decide is pure, so the returned
// transitions never share growable room with the input's array.
// Attack: the input has spare capacity; an append to the result and
// one to the input must not overwrite each other.
func TestDecideLeavesTheTransitionsArray(t *testing.T) {
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	t1 := now.Add(-time.Hour)
	base := make([]time.Time, 1, 4)
	base[0] = t1
	f := findings.Finding{ID: "x", Severity: findings.SeverityWarning, Status: findings.StatusActive, Transitions: base}
	got, _ := findings.DefaultPublishPolicy().Decide(findings.Change{Kind: findings.ChangeUnchanged, Finding: f}, false, now)
	if want := []time.Time{t1}; !reflect.DeepEqual(got.Transitions, want) {
		t.Fatalf("transitions = %v, want %v", got.Transitions, want)
	}
	ours := append(got.Transitions, now)
	theirs := append(base, now.Add(time.Minute))
	if want := []time.Time{t1, now}; !reflect.DeepEqual(ours, want) {
		t.Fatalf("after an append to the input, the result's append = %v, want %v", ours, want)
	}
	if want := []time.Time{t1, now.Add(time.Minute)}; !reflect.DeepEqual(theirs, want) {
		t.Fatalf("the input's append = %v, want %v", theirs, want)
	}
}

// TestDecidePrunesTransitions: only the times inside the flap window
// before now are kept, in order, whatever the order of the input.
func TestDecidePrunesTransitions(t *testing.T) {
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	w := findings.DefaultFlapWindow
	in := []time.Time{now.Add(-w - time.Second), now.Add(-time.Hour), now.Add(-w), now.Add(-time.Minute)}
	orig := slices.Clone(in)
	f := findings.Finding{ID: "x", Severity: findings.SeverityWarning, Status: findings.StatusActive, Transitions: in}
	got, _ := findings.DefaultPublishPolicy().Decide(findings.Change{Kind: findings.ChangeUnchanged, Finding: f}, false, now)
	if want := []time.Time{now.Add(-time.Hour), now.Add(-time.Minute)}; !reflect.DeepEqual(got.Transitions, want) {
		t.Fatalf("transitions = %v, want %v", got.Transitions, want)
	}
	if !reflect.DeepEqual(in, orig) {
		t.Fatalf("input changed to %v, want %v", in, orig)
	}
}

// TestObserveExistingKeepsItsID: observing an existing finding keeps
// its id (Observe hashes only for a new finding).
func TestObserveExistingKeepsItsID(t *testing.T) {
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	o := findings.Observation{ResourceID: "node/a", Category: "Performance", Key: "High_CPU", Severity: findings.SeverityWarning}
	first := findings.Observe(nil, o, now, "r1")
	if want := findings.ID("node/a", findings.CategoryPerformance, findings.NormalizeKey("High_CPU")); first.Finding.ID != want {
		t.Fatalf("new finding id = %q, want %q", first.Finding.ID, want)
	}
	again := findings.Observe(&first.Finding, o, now.Add(time.Minute), "r2")
	if again.Finding.ID != first.Finding.ID || again.Finding.Key != first.Finding.Key || again.Finding.Category != first.Finding.Category {
		t.Fatalf("observed again: id %q key %q category %q, want %q %q %q", again.Finding.ID, again.Finding.Key, again.Finding.Category,
			first.Finding.ID, first.Finding.Key, first.Finding.Category)
	}
}

// BenchmarkObserveSteady is a steady run's observation of an active
// finding.
func BenchmarkObserveSteady(b *testing.B) {
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	o := findings.Observation{ResourceID: "vm/pve1/100-web-frontend", Category: findings.CategoryCapacity, Key: "high_disk", Severity: findings.SeverityWarning}
	existing := findings.Observe(nil, o, now, "r1").Finding
	b.ReportAllocs()
	for b.Loop() {
		_ = findings.Observe(&existing, o, now, "r2")
	}
}

// BenchmarkInhibit is one run's inhibition over a node and its guests.
func BenchmarkInhibit(b *testing.B) {
	obs := []findings.Observation{{ResourceID: "node/pve1", Category: findings.CategoryReliability, Key: "node_down", Severity: findings.SeverityCritical}}
	for i := range 64 {
		obs = append(obs, findings.Observation{ResourceID: "vm/pve1/" + strconv.Itoa(i), Category: findings.CategoryCapacity, Key: "high_disk", Severity: findings.SeverityWarning})
	}
	parents := func(string) []string { return []string{"node/pve1"} }
	b.ReportAllocs()
	for b.Loop() {
		findings.Inhibit(obs, parents)
	}
}
