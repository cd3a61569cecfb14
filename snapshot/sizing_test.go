package snapshot_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/demo"
)

// decodeFile decodes data from a file, as the file source does (the
// reader can tell its size), handing batches of batch resources to a
// consumer; it returns the snapshot and the batches concatenated.
func decodeFile(t *testing.T, data []byte, batch int) (*snapshot.Snapshot, []snapshot.Problem, []snapshot.Resource, []*snapshot.Resource) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fleet.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var handed []snapshot.Resource
	var firsts []*snapshot.Resource // the first resource of each batch, in place
	snap, probs, err := snapshot.DecodeReader(f, snapshot.DecodeOptions{KeptBatch: batch, Kept: func(h snapshot.Handed) {
		if h.At != len(handed) {
			t.Errorf("batch at %d, want %d", h.At, len(handed))
		}
		handed = append(handed, h.Resources...)
		firsts = append(firsts, &h.Resources[0])
	}})
	if err != nil {
		t.Fatal(err)
	}
	return snap, probs, handed, firsts
}

// TestDecodeFileSizesTheResourceSlice: a file's resources are decoded
// into a slice sized from the bytes its first resources took, not from a
// guess of bytes a resource (which left a generated fleet's slice 1.6
// times as long as its resources). The snapshot, its problems and the
// batches handed over are what Decode gets from the bytes, whatever the
// batch size. A file whose later resources are larger (fewer than the
// first promised: the slice is left longer) or smaller (more: the slice
// grows) decodes the same. The slice is
// sized once: a batch of the default size or larger is handed over from
// the very slice the snapshot keeps (not from one append outgrew).
func TestDecodeFileSizesTheResourceSlice(t *testing.T) {
	fleet, err := snapshot.Encode(demo.Generate(demo.Options{Seed: 1, Resources: 20_000, FaultRate: 0.1}, time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)))
	if err != nil {
		t.Fatal(err)
	}
	small := func(i int) snapshot.Resource {
		return snapshot.Resource{ID: "vm/" + strconv.Itoa(i), Kind: snapshot.KindVM}
	}
	large := func(i int) snapshot.Resource {
		r := small(i)
		r.Name, r.Notes, r.Tags = "guest-"+strconv.Itoa(i), strings.Repeat("n", 400), []string{"a", "b", "c"}
		return r
	}
	mixed := func(first, rest func(int) snapshot.Resource) []byte {
		snap := &snapshot.Snapshot{Version: 1, TakenAt: time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)}
		for i := range 6000 {
			r := rest(i)
			if i < 1500 {
				r = first(i)
			}
			snap.Resources = append(snap.Resources, r)
		}
		data, err := snapshot.Encode(snap)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for _, c := range []struct {
		name   string
		data   []byte
		maxCap float64 // of the resources decoded; 0: unbounded
		once   bool    // the slice is allocated once after the first batch
	}{
		{"fleet", fleet, 1.1, true},
		{"larger later", mixed(small, large), 0, true},
		{"smaller later", mixed(large, small), 0, false},
	} {
		want, wantProbs, err := snapshot.Decode(c.data, snapshot.DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, batch := range []int{300, snapshot.DefaultKeptBatch, 5000} {
			got, probs, handed, firsts := decodeFile(t, c.data, batch)
			if !reflect.DeepEqual(got.Resources, want.Resources) || !reflect.DeepEqual(probs, wantProbs) ||
				!got.TakenAt.Equal(want.TakenAt) || got.Version != want.Version || got.Source != want.Source {
				t.Fatalf("%s, batch %d: the file decodes other than the bytes", c.name, batch)
			}
			if !reflect.DeepEqual(handed, want.Resources) {
				t.Fatalf("%s, batch %d: %d resources handed over, not the snapshot's %d", c.name, batch, len(handed), len(want.Resources))
			}
			if n := len(got.Resources); c.maxCap > 0 && float64(cap(got.Resources)) > c.maxCap*float64(n) {
				t.Fatalf("%s, batch %d: room for %d resources, %d decoded (at most %.1fx)", c.name, batch, cap(got.Resources), n, c.maxCap)
			}
			for i, p := range firsts {
				if c.once && batch >= snapshot.DefaultKeptBatch && p != &got.Resources[i*batch] {
					t.Fatalf("%s, batch %d: batch %d handed from a slice the snapshot does not keep (cap %d, len %d)", c.name, batch, i, cap(got.Resources), len(got.Resources))
				}
			}
		}
	}
}
