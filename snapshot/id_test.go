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

// TestDecodeRefusesIDsOutsideTheGrammar: a resource id is kind/rest with
// printable characters, no part starting with "-". An id without a slash
// (such as "--all", which a command would take for an option), with no
// kind or no rest, with a part a command would take for an option, or with
// a control or unprintable character drops its resource with a problem
// naming the field; a canonical spelling of a fit id is kept.
func TestDecodeRefusesIDsOutsideTheGrammar(t *testing.T) {
	doc := `{"version":1,"resources":[
 {"id":"vm101","kind":"vm"},
 {"id":"--all","kind":"vm"},
 {"id":"/101","kind":"vm"},
 {"id":"vm/","kind":"vm"},
 {"id":" vm/ ","kind":"vm"},
 {"id":"vm/1\u0007","kind":"vm"},
 {"id":"vm/1\u00ad","kind":"vm"},
 {"id":"vm/--all","kind":"vm"},
 {"id":"-vm/1","kind":"vm"},
 {"id":"storage/pve1/-rf","kind":"storage"},
 {"id":"storage/pve1/a-b","kind":"storage"},
 {"id":" VM/ok ","kind":"vm"}]}`
	snap, probs, err := snapshot.Decode([]byte(doc), snapshot.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []snapshot.Problem{
		{ID: "vm101", Index: 0, Field: "id", Problem: `not kind/name: no "/"`},
		{ID: "--all", Index: 1, Field: "id", Problem: `not kind/name: no "/"`},
		{ID: "/101", Index: 2, Field: "id", Problem: `not kind/name: no kind before "/"`},
		{ID: "vm/", Index: 3, Field: "id", Problem: `not kind/name: no name after "/"`},
		{ID: "vm/", Index: 4, Field: "id", Problem: `not kind/name: no name after "/"`},
		{ID: `vm/1\a`, Index: 5, Field: "id", Problem: `control character '\a' at byte 4`},
		{ID: `vm/1\u00ad`, Index: 6, Field: "id", Problem: "unprintable character U+00AD at byte 4"},
		{ID: "vm/--all", Index: 7, Field: "id", Problem: `part "--all" starts with "-"`},
		{ID: "-vm/1", Index: 8, Field: "id", Problem: `part "-vm" starts with "-"`},
		{ID: "storage/pve1/-rf", Index: 9, Field: "id", Problem: `part "-rf" starts with "-"`},
	}
	if !reflect.DeepEqual(probs, want) {
		t.Errorf("problems\n got %#v\nwant %#v", probs, want)
	}
	if wantKept := []snapshot.Resource{{ID: "storage/pve1/a-b", Kind: snapshot.KindStorage}, {ID: "vm/ok", Kind: snapshot.KindVM}}; !reflect.DeepEqual(snap.Resources, wantKept) {
		t.Errorf("resources %+v, want %+v", snap.Resources, wantKept)
	}
	if got := probs[1].String(); got != `--all: id: not kind/name: no "/"` {
		t.Errorf("problem reads %q", got)
	}
}
