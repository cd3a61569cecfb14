package snapshot_test

import (
	"reflect"
	"testing"

	"github.com/patrold/patrold/snapshot"
)

// TestCounts: every known kind is counted, with zeros for the absent ones,
// and a kind outside the catalogue (a snapshot built in code, not decoded)
// is counted under its own name.
func TestCounts(t *testing.T) {
	s := &snapshot.Snapshot{Resources: []snapshot.Resource{
		{ID: "node/a", Kind: snapshot.KindNode}, {ID: "vm/1", Kind: snapshot.KindVM}, {ID: "vm/2", Kind: snapshot.KindVM},
		{ID: "disk/a", Kind: snapshot.KindDisk}, {ID: "x/1", Kind: "switch"}, {ID: "x/2", Kind: "switch"},
	}}
	want := map[snapshot.Kind]int{snapshot.KindNode: 1, snapshot.KindVM: 2, snapshot.KindContainer: 0, snapshot.KindStorage: 0, snapshot.KindDisk: 1, "switch": 2}
	if got := s.Counts(); !reflect.DeepEqual(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	empty := map[snapshot.Kind]int{snapshot.KindNode: 0, snapshot.KindVM: 0, snapshot.KindContainer: 0, snapshot.KindStorage: 0, snapshot.KindDisk: 0}
	if got := (&snapshot.Snapshot{}).Counts(); !reflect.DeepEqual(got, empty) {
		t.Fatalf("empty counts %v, want %v", got, empty)
	}
}
