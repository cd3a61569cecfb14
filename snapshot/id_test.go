package snapshot_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/patrold/patrold/snapshot"
)

// TestDecodeRefusesUnfitIDs: an id or a parent with a control, format or
// bidi character, or longer than the cap, makes its resource invalid with
// a problem naming the field; the problem names the id escaped.
func TestDecodeRefusesUnfitIDs(t *testing.T) {
	long := "vm/" + strings.Repeat("a", snapshot.MaxIDBytes)
	doc := `{"version":1,"taken_at":"2026-11-29T06:00:00Z","resources":[
 {"id":"vm/1\u001b[2J\nlevel=ERROR msg=\"all clear\"","kind":"vm"},
 {"id":"vm/2\u202eevil","kind":"vm"},
 {"id":"vm/3","kind":"vm","parent":"node/a\u200b"},
 {"id":"` + long + `","kind":"vm"},
 {"id":"vm/ok-1","kind":"vm","parent":"node/pve1"}]}`
	snap, probs, err := snapshot.Decode([]byte(doc), snapshot.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []snapshot.Problem{
		{ID: `vm/1\x1b[2J\nlevel=ERROR msg=\"all clear\"`, Index: 0, Field: "id", Problem: `control character '\x1b' at byte 4`},
		{ID: `vm/2\u202eevil`, Index: 1, Field: "id", Problem: "unprintable character U+202E at byte 4"},
		{ID: "vm/3", Index: 2, Field: "parent", Problem: "unprintable character U+200B at byte 6"},
		{ID: long[:snapshot.MaxIDBytes] + "...", Index: 3, Field: "id", Problem: "longer than 256 bytes"},
	}
	if !reflect.DeepEqual(probs, want) {
		t.Errorf("problems\n got %#v\nwant %#v", probs, want)
	}
	if len(snap.Resources) != 1 || snap.Resources[0].ID != "vm/ok-1" {
		t.Errorf("resources %+v", snap.Resources)
	}
	for _, id := range []string{"vm/101", "storage/pve1/local-zfs", "vm/Zürich 1"} {
		if p := snapshot.IDProblem(id); p != "" {
			t.Errorf("IDProblem(%q) = %q", id, p)
		}
	}
}
