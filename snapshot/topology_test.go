package snapshot_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/patrold/patrold/snapshot"
)

// TestParentsDecoded: parents are kept canonical, in order, and
// ParentIDs puts parent first without repeats.
func TestParentsDecoded(t *testing.T) {
	doc := `{"version":1,"resources":[
	 {"id":"vm/1","kind":"vm","parent":"node/a","parents":["storage/a/zfs","STORAGE/nas/vol","node/a"]},
	 {"id":"storage/a/zfs","kind":"storage","parent":"node/a"}]}`
	snap, probs, err := snapshot.Decode([]byte(doc), snapshot.DecodeOptions{})
	if err != nil || len(probs) != 0 {
		t.Fatalf("decode: %v %v", err, probs)
	}
	want := []string{"storage/a/zfs", "storage/nas/vol", "node/a"}
	if got := snap.Resources[0].Parents; !reflect.DeepEqual(got, want) {
		t.Fatalf("parents %q, want %q", got, want)
	}
	if got, want := snap.Resources[0].ParentIDs(), []string{"node/a", "storage/a/zfs", "storage/nas/vol"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ParentIDs %q, want %q", got, want)
	}
	if got := snap.Resources[1].ParentIDs(); !reflect.DeepEqual(got, []string{"node/a"}) {
		t.Fatalf("storage ParentIDs %q", got)
	}
}

// TestParentsRejected: every unfit parents list drops its resource with
// a problem naming the entry.
func TestParentsRejected(t *testing.T) {
	many := make([]string, snapshot.MaxParents+1)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprintf("storage/n/%d", i))
	}
	doc := `{"version":1,"resources":[
	 {"id":"vm/1","kind":"vm","parents":["storage/a",""]},
	 {"id":"vm/2","kind":"vm","parents":[null]},
	 {"id":"vm/3","kind":"vm","parents":["storage/a\u0007"]},
	 {"id":"vm/4","kind":"vm","parents":["VM/4"]},
	 {"id":"vm/5","kind":"vm","parents":"storage/a"},
	 {"id":"vm/6","kind":"vm","parents":[` + strings.Join(many, ",") + `]},
	 {"id":"vm/7","kind":"vm","parents":[]}]}`
	snap, probs, err := snapshot.Decode([]byte(doc), snapshot.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []snapshot.Problem{
		{ID: "vm/1", Index: 0, Field: "parents[1]", Problem: "required"},
		{ID: "vm/2", Index: 1, Field: "parents[0]", Problem: "required"},
		{ID: "vm/3", Index: 2, Field: "parents[0]", Problem: `control character '\a' at byte 9`},
		{ID: "vm/4", Index: 3, Field: "parents[0]", Problem: "is the resource itself"},
		{ID: "vm/5", Index: 4, Field: "parents", Problem: "must be an array, got string"},
		{ID: "vm/6", Index: 5, Field: "parents", Problem: "65 entries, at most 64"},
	}
	if !reflect.DeepEqual(probs, want) {
		t.Fatalf("problems\n%+v\nwant\n%+v", probs, want)
	}
	if len(snap.Resources) != 1 || snap.Resources[0].ID != "vm/7" {
		t.Fatalf("kept %+v", snap.Resources)
	}
}

// TestDropUnfitParents: a source that builds resources itself has its
// parents checked like a decoded document's.
func TestDropUnfitParents(t *testing.T) {
	snap := &snapshot.Snapshot{Resources: []snapshot.Resource{
		{ID: "vm/1", Kind: snapshot.KindVM, Parents: []string{"storage/a"}},
		{ID: "vm/2", Kind: snapshot.KindVM, Parents: []string{"vm/2"}},
	}}
	probs := snapshot.DropUnfitIDs(snap, nil)
	want := []snapshot.Problem{{ID: "vm/2", Index: 1, Field: "parents[0]", Problem: "is the resource itself"}}
	if !reflect.DeepEqual(probs, want) || len(snap.Resources) != 1 {
		t.Fatalf("problems %+v kept %+v", probs, snap.Resources)
	}
}
