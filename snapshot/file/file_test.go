package file_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/demo"
	"github.com/patrold/patrold/snapshot/file"
)

// TestLoadStreamsWhatDecodeDecodes: a file read as a stream gives what
// snapshot.Decode gives for its bytes, problems and rejections included.
func TestLoadStreamsWhatDecodeDecodes(t *testing.T) {
	dir := t.TempDir()
	faults, err := os.ReadFile("../../examples/small-faults.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string][]byte{
		"faults.json":  faults,
		"dropped.json": []byte(`{"version":1,"resources":[{"id":"vm/1","kind":"vm","metrics":{"cpu_percent":101}},{"id":"vm/2","kind":"vm"}]}`),
		"broken.json":  []byte(`{"version":1,"resources":[{"id":"vm/1",}]}`),
		"version.json": []byte(`{"version":2,"resources":[]}`),
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, doc, 0o600); err != nil {
			t.Fatal(err)
		}
		want, wantProbs, wantErr := snapshot.Decode(doc, snapshot.DecodeOptions{})
		got, gotProbs, gotErr := file.Load(path)
		if wantErr != nil {
			if gotErr == nil || gotErr.Error() != path+": "+wantErr.Error() || !errors.Is(gotErr, snapshot.ErrInvalidDocument) {
				t.Errorf("%s: error %v, want %s: %v", name, gotErr, path, wantErr)
			}
			continue
		}
		if gotErr != nil || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotProbs, wantProbs) {
			t.Errorf("%s: got %v %v %v, want %v %v", name, gotErr, got, gotProbs, want, wantProbs)
		}
	}
	if _, _, err := file.Load(filepath.Join(dir, "missing.json")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestSizeLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "snap.json")
	doc := `{"version":1,"resources":[{"id":"node/a","kind":"node","status":"online"}]}`
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	small, err := file.New(file.Options{Path: p, MaxBytes: 20})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = small.Collect(context.Background())
	if !errors.Is(err, file.ErrTooLarge) || !strings.Contains(err.Error(), "over source.file.max_bytes (20)") {
		t.Fatalf("over the limit: %v", err)
	}
	exact, _ := file.New(file.Options{Path: p, MaxBytes: int64(len(doc))})
	snap, _, err := exact.Collect(context.Background())
	if err != nil || len(snap.Resources) != 1 {
		t.Fatalf("at the limit: %v", err)
	}
	if _, _, err := file.Load(p); err != nil {
		t.Fatalf("default limit: %v", err)
	}
}

// TestLoadSizesResourcesFromTheFile: through the size limit the decoder
// still sees the file's size, so the resource slice is sized once from it
// (as decoding the *os.File directly does), not grown resource by
// resource.
func TestLoadSizesResourcesFromTheFile(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"version":1,"resources":[`)
	for i := range 3000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":"vm/%d","kind":"vm","status":"running","notes":%q}`, i, strings.Repeat("n", 300))
	}
	b.WriteString(`]}`)
	p := filepath.Join(t.TempDir(), "fleet.json")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	direct, _, err := snapshot.DecodeReader(f, snapshot.DecodeOptions{})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	loaded, _, err := file.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Resources) != 3000 || cap(loaded.Resources) != cap(direct.Resources) || cap(direct.Resources) < 3000 {
		t.Fatalf("loaded %d resources in a slice of %d, decoding the file directly sizes it %d", len(loaded.Resources), cap(loaded.Resources), cap(direct.Resources))
	}
}

// TestCollectKeptIsCollect: the file source hands its resources over as it
// decodes them, and what it returns is what Collect returns; a rejected
// file is rejected in the same words.
func TestCollectKeptIsCollect(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	fleet, err := snapshot.Encode(demo.Generate(demo.Options{Seed: 2, Resources: 2500, FaultRate: 0.1}, at))
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string][]byte{
		"fleet.json":  fleet,
		"broken.json": []byte(`{"version":1,"resources":[{"id":"vm/1",}]}`),
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, doc, 0o600); err != nil {
			t.Fatal(err)
		}
		src, err := file.New(file.Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		want, wantProbs, wantErr := src.Collect(context.Background())
		var batches [][]snapshot.Resource
		var decoding uint64
		got, gotProbs, gotErr := src.CollectKept(context.Background(), func(h snapshot.Handed) {
			if !h.TakenAt.Equal(at) {
				t.Errorf("%s: a batch taken at %v, want %v", name, h.TakenAt, at)
			}
			batches, decoding = append(batches, h.Resources), h.Decoding
		})
		if wantErr != nil {
			if gotErr == nil || gotErr.Error() != wantErr.Error() {
				t.Errorf("%s: CollectKept error %v, Collect %v", name, gotErr, wantErr)
			}
			continue
		}
		if gotErr != nil || !reflect.DeepEqual(gotProbs, wantProbs) {
			t.Fatalf("%s: CollectKept %v, Collect %v (or the snapshots differ)", name, gotErr, wantErr)
		}
		if !reflect.DeepEqual(got.Resources, want.Resources) || got.TakenAt != want.TakenAt || got.Source != want.Source || got.Version != want.Version {
			t.Fatalf("%s: CollectKept's snapshot differs from Collect's", name)
		}
		if len(batches) != 3 || decoding == 0 || got.HeldFrom() != decoding || want.HeldFrom() != 0 {
			t.Errorf("%s: %d batches of decoding %d, held from %d (Collect's %d); want 3 (1024, 1024, 452), held (not)", name, len(batches), decoding, got.HeldFrom(), want.HeldFrom())
		}
	}
}
