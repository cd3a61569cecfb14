package snapshot_test

import (
	"reflect"
	"testing"

	"github.com/patrold/patrold/snapshot"
)

// TestDropUnfitIDs: a source's own resources with an unfit id or parent
// are dropped with the problem Decode would report; the rest stay, in
// order.
func TestDropUnfitIDs(t *testing.T) {
	snap := &snapshot.Snapshot{Resources: []snapshot.Resource{
		{ID: "node/pve1", Kind: snapshot.KindNode},
		{ID: "vm/1\x1b[2J", Kind: snapshot.KindVM},
		{ID: "vm/2", Kind: snapshot.KindVM, Parent: "node/\u202eevil"},
		{ID: "vm/3", Kind: snapshot.KindVM, Parent: "node/pve1"},
	}}
	probs := snapshot.DropUnfitIDs(snap, []snapshot.Problem{{ID: "x", Index: -1, Field: "source", Problem: "earlier"}})
	want := []snapshot.Problem{
		{ID: "x", Index: -1, Field: "source", Problem: "earlier"},
		{ID: `vm/1\x1b[2J`, Index: 1, Field: "id", Problem: `control character '\x1b' at byte 4`},
		{ID: "vm/2", Index: 2, Field: "parent", Problem: "unprintable character U+202E at byte 5"},
	}
	if !reflect.DeepEqual(probs, want) {
		t.Errorf("problems\n got %#v\nwant %#v", probs, want)
	}
	var ids []string
	for _, r := range snap.Resources {
		ids = append(ids, r.ID)
	}
	if !reflect.DeepEqual(ids, []string{"node/pve1", "vm/3"}) {
		t.Errorf("kept %v", ids)
	}
	clean := &snapshot.Snapshot{Resources: []snapshot.Resource{{ID: "vm/9", Kind: snapshot.KindVM}}}
	if p := snapshot.DropUnfitIDs(clean, nil); p != nil || len(clean.Resources) != 1 {
		t.Errorf("a clean snapshot: %v %v", p, clean.Resources)
	}
}
