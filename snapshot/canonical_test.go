package snapshot_test

import (
	"testing"
	"unsafe"

	"github.com/patrold/patrold/snapshot"
)

// TestCanonicalID: the kind prefix is lower-cased and the id trimmed;
// the rest is kept as it is.
func TestCanonicalID(t *testing.T) {
	for in, want := range map[string]string{
		"vm/pve1/100":       "vm/pve1/100",
		"VM/PVE1/100":       "vm/PVE1/100",
		"  Node/Pve1 \n":    "node/Pve1",
		"ÄB/x":              "äb/x",
		"äb/X":              "äb/X",
		"/vm/x":             "/vm/x",
		"no-slash-AT-ALL":   "no-slash-AT-ALL",
		"":                  "",
		"Storage/pve1/Data": "storage/pve1/Data",
	} {
		if got := snapshot.CanonicalID(in); got != want {
			t.Errorf("CanonicalID(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCanonicalIDKeepsACanonicalID: an id that is already canonical is
// returned itself, not a copy (a decoded snapshot's ids nearly all are).
// Attack: the same bytes in a new string fail the pointer comparison.
func TestCanonicalIDKeepsACanonicalID(t *testing.T) {
	for _, id := range []string{"vm/pve1/100-web", "äb/X", "no-slash-AT-ALL"} {
		got := snapshot.CanonicalID(id)
		if got != id || unsafe.StringData(got) != unsafe.StringData(id) {
			t.Errorf("CanonicalID(%q) = %q at %p, want the id itself at %p", id, got, unsafe.StringData(got), unsafe.StringData(id))
		}
	}
}

// BenchmarkCanonicalID is an id that is already canonical, as nearly
// every id of a decoded snapshot is.
func BenchmarkCanonicalID(b *testing.B) {
	id := "vm/pve1/100-web-frontend"
	b.ReportAllocs()
	for b.Loop() {
		_ = snapshot.CanonicalID(id)
	}
}
