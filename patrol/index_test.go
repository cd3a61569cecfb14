package patrol

import (
	"slices"
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

// TestResourceFactsAnswerAsTheIndex: the facts a run keeps for its
// commit answer, for every id it asked about, as the index and the
// resource would: held or not, each catalogue type evaluated or not, the
// topology parents. An id it did not ask about has no facts, and the
// checker calls a finding on it unknown (the run's detection did not
// see it), where the snapshot held its resource or not.
func TestResourceFactsAnswerAsTheIndex(t *testing.T) {
	running, stopped := snapshot.StatusRunning, snapshot.StatusStopped
	snap := &snapshot.Snapshot{Resources: []snapshot.Resource{
		{ID: "node/a", Kind: snapshot.KindNode, Status: "online", Metrics: snapshot.MetricsOf(map[string]float64{snapshot.MetricCPU: 10})},
		{ID: "vm/1", Kind: snapshot.KindVM, Parent: "node/a", Parents: []string{"storage/a/x"}, Status: running,
			Metrics: snapshot.MetricsOf(map[string]float64{snapshot.MetricCPU: 10, snapshot.MetricDisk: 5}),
			Backup:  &snapshot.Backup{LastStatus: snapshot.BackupOK, Storage: "storage/a/b"}},
		{ID: "vm/2", Kind: snapshot.KindVM, Parent: "node/a", Status: stopped},
		{ID: "disk/a/sda", Kind: snapshot.KindDisk, Parent: "node/a", Smart: &snapshot.Smart{Health: "PASSED"}},
		{ID: "vm/9", Kind: snapshot.KindVM, Status: running},
	}}
	asked := askedIDs([]findings.Finding{{ResourceID: "vm/1"}, {ResourceID: "vm/gone"}, {ResourceID: "disk/a/sda"}},
		[]signals.Signal{{ResourceID: "node/a"}, {ResourceID: "vm/2"}})
	x := newResourceIndex(snap, asked)
	facts := newResourceFacts(x)
	parents := facts.parentsIn(map[string][]string{"vm/1": {"network/10.0.0.0/24"}})
	for id := range asked {
		r := x.get(id)
		f, held := facts.held[id]
		if held != (r != nil) {
			t.Fatalf("%s: held %v, the index holds %v", id, held, r)
		}
		if r == nil {
			if p := parents(id); p != nil {
				t.Fatalf("%s: parents %v of a resource not held", id, p)
			}
			continue
		}
		for _, typ := range signals.Types {
			if got, want := f.evaluated(typ), signals.Evaluated(r, typ); got != want {
				t.Fatalf("%s: %s evaluated %v, want %v", id, typ, got, want)
			}
		}
		want := topologyParents(r)
		if id == "vm/1" {
			want = append(want, "network/10.0.0.0/24")
		}
		if got := parents(id); !slices.Equal(got, want) {
			t.Fatalf("%s: parents %v, want %v", id, got, want)
		}
	}
	// The storage its backups go to (storage/a/b) is not a parent.
	if got := parents("vm/1"); !slices.Equal(got, []string{"node/a", "storage/a/x", "network/10.0.0.0/24"}) {
		t.Fatalf("vm/1 parents %v, asked twice", got)
	}
	if _, held := facts.held["vm/9"]; held || parents("vm/9") != nil {
		t.Fatal("vm/9, not asked, has facts")
	}
	check := checker(facts, map[signals.Key]bool{}, nil, nil, false, true)
	for _, c := range []struct {
		f    findings.Finding
		want findings.Check
	}{
		{findings.Finding{ResourceID: "vm/9", Key: string(signals.TypeHighCPU), Category: findings.CategoryPerformance}, findings.CheckUnknown},
		{findings.Finding{ResourceID: "vm/new", Key: string(signals.TypeHighCPU), Category: findings.CategoryPerformance}, findings.CheckUnknown},
		{findings.Finding{ResourceID: "vm/gone", Key: string(signals.TypeHighCPU), Category: findings.CategoryPerformance}, findings.CheckAbsent},
		{findings.Finding{ResourceID: "vm/1", Key: string(signals.TypeHighCPU), Category: findings.CategoryPerformance}, findings.CheckCleared},
		{findings.Finding{ResourceID: "vm/2", Key: string(signals.TypeHighCPU), Category: findings.CategoryPerformance}, findings.CheckUnknown},
		{findings.Finding{ResourceID: "disk/a/sda", Key: string(signals.TypeDiskWear), Category: findings.Category(signals.TypeDiskWear.Category())}, findings.CheckUnknown},
		{findings.Finding{ResourceID: "disk/a/sda", Key: string(signals.TypeSmartFailure), Category: findings.Category(signals.TypeSmartFailure.Category())}, findings.CheckCleared},
	} {
		if got := check(&c.f); got != c.want {
			t.Fatalf("check %s %s: %v, want %v", c.f.ResourceID, c.f.Key, got, c.want)
		}
	}
	if len(signals.Types) > 32 {
		t.Fatalf("%d catalogue types, more than a fact's 32 bits", len(signals.Types))
	}
}
