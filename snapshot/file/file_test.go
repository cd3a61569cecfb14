package file_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/patrold/patrold/snapshot"
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
