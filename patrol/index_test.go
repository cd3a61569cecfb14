package patrol

import (
	"testing"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// TestResourceIndexAnswersAsAFullIndex: the index built for the ids a run
// asks about answers every lookup as an index of the whole snapshot would,
// also for an id it was not built for (then it indexes everything once).
func TestResourceIndexAnswersAsAFullIndex(t *testing.T) {
	snap := &snapshot.Snapshot{Resources: []snapshot.Resource{
		{ID: "vm/1", Kind: snapshot.KindVM}, {ID: "vm/2", Kind: snapshot.KindVM}, {ID: "node/a", Kind: snapshot.KindNode},
		{ID: "vm/2", Kind: snapshot.KindContainer},
	}}
	asked := askedIDs([]findings.Finding{{ResourceID: "VM/2"}, {ResourceID: "vm/gone"}}, []signals.Signal{{ResourceID: "node/a"}})
	if want := map[string]bool{"vm/2": true, "vm/gone": true, "node/a": true}; len(asked) != len(want) || !asked["vm/2"] || !asked["vm/gone"] || !asked["node/a"] {
		t.Fatalf("asked %v, want %v", asked, want)
	}
	x := newResourceIndex(snap, asked)
	full := indexResources(snap)
	if len(x.byID) != 2 || x.full {
		t.Fatalf("index of the asked ids holds %d resources (full %v), want 2", len(x.byID), x.full)
	}
	for _, id := range []string{"vm/2", "node/a", "vm/gone"} {
		if got := x.get(id); got != full[id] {
			t.Fatalf("get(%q) = %v, want %v", id, got, full[id])
		}
	}
	if x.full {
		t.Fatal("asked ids indexed the whole snapshot")
	}
	if got := x.get("vm/1"); got != full["vm/1"] || got == nil || !x.full {
		t.Fatalf("get(vm/1), not asked: %v (full %v), want %v", got, x.full, full["vm/1"])
	}
	if got := x.get("vm/2"); got != &snap.Resources[3] {
		t.Fatalf("after the full index, get(vm/2) = %v, want the last resource with that id", got)
	}
}
