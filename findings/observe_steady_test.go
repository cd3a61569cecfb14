package findings

import (
	"reflect"
	"testing"
	"time"

	"github.com/patrold/patrold/model/prompt"
)

func steadyObservation() Observation {
	return Observation{
		Key: "high_cpu", ResourceID: "vm/100", ResourceKind: "vm",
		ResourceName: prompt.SafeName("web-1"), ResourceNode: prompt.SafeName("pve1"),
		ResourceTags: []prompt.Text{prompt.SafeName("prod"), prompt.SafeName("web")},
		Category:     CategoryPerformance, Severity: SeverityWarning, Source: SourceDeterministic,
		Title: prompt.Safe("High CPU", 200), Evidence: prompt.Safe("cpu_percent_avg 91.5 over 900 s", 500),
	}
}

// TestSteadyObserveAllocatesOnlyPrevious pins the cost of a steady
// re-detection: one allocation, the copy Previous points to. Hashing the
// id again (a string) or copying the same tags (a slice) is one more.
func TestSteadyObserveAllocatesOnlyPrevious(t *testing.T) {
	at := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	o := steadyObservation()
	existing := Observe(nil, o, at, "run-0").Finding
	var c Change
	allocs := testing.AllocsPerRun(100, func() {
		c = Observe(&existing, o, at.Add(time.Hour), "run-1")
	})
	if allocs != 1 {
		t.Fatalf("a steady Observe allocates %v times, want 1 (Previous)", allocs)
	}
	if c.Kind != ChangeUnchanged {
		t.Fatalf("change %s, want unchanged", c.Kind)
	}
}

// TestSteadyObserveWholeChange compares the whole change of a steady
// re-detection: Previous is the existing finding, untouched, and the new
// state differs only in what a re-detection moves.
func TestSteadyObserveWholeChange(t *testing.T) {
	at := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	o := steadyObservation()
	existing := Observe(nil, o, at, "run-0").Finding
	before := existing
	before.ResourceTags = []string{"prod", "web"}
	before.Transitions = []time.Time{at}
	c := Observe(&existing, o, at.Add(time.Hour), "run-1")
	want := before
	want.LastSeenAt, want.LastRunID, want.TimesRaised = at.Add(time.Hour), "run-1", 2
	wantChange := Change{Finding: want, Kind: ChangeUnchanged, Previous: &before}
	if !reflect.DeepEqual(c, wantChange) {
		t.Fatalf("steady change:\n got %+v\nwant %+v", c, wantChange)
	}
	if c.Previous == &existing {
		t.Fatal("Previous aliases the caller's finding, which the caller may reuse")
	}
	if !reflect.DeepEqual(existing, before) {
		t.Fatalf("Observe changed the existing finding:\n got %+v\nwant %+v", existing, before)
	}
	// Other tags, or none where there were some, replace the kept slice.
	o.ResourceTags = []prompt.Text{prompt.SafeName("prod")}
	if got := Observe(&existing, o, at, "run-2").Finding.ResourceTags; !reflect.DeepEqual(got, []string{"prod"}) {
		t.Fatalf("changed tags: got %q, want [prod]", got)
	}
	o.ResourceTags = []prompt.Text{}
	if got := Observe(&existing, o, at, "run-2").Finding.ResourceTags; got == nil || len(got) != 0 {
		t.Fatalf("emptied tags: got %#v, want an empty non-nil slice", got)
	}
	untagged := existing
	untagged.ResourceTags = nil
	if got := Observe(&untagged, o, at, "run-2").Finding.ResourceTags; got == nil || len(got) != 0 {
		t.Fatalf("empty tags on an untagged finding: got %#v, want an empty non-nil slice", got)
	}
	// A key in a variant spelling is still canonicalised without its id.
	o = steadyObservation()
	o.Key, o.Category, o.Severity = "CPU High", "Performance ", "bogus"
	c = Observe(&existing, o, at.Add(time.Hour), "run-1")
	if !reflect.DeepEqual(c, wantChange) {
		t.Fatalf("variant spelling:\n got %+v\nwant %+v", c, wantChange)
	}
}
