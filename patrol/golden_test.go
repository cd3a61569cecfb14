package patrol_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/patrold/patrold/snapshot"
)

var update = flag.Bool("update", false, "rewrite the golden run reports in testdata/golden")

// TestGoldenRunReports runs the example fleets in sequence on one store
// (faults, then healthy, then faults again, then the hostile fleet) and
// compares each whole run report with its golden file: every signal,
// finding change, resolution, status and text. `go test ./patrol -run
// TestGoldenRunReports -update` rewrites the files after a deliberate
// change; review the diff.
func TestGoldenRunReports(t *testing.T) {
	goldenRuns(t, newEnv(t))
}

func goldenRuns(t *testing.T, e *env) {
	hostile := func() *snapshot.Snapshot {
		data, err := os.ReadFile(filepath.Join("testdata", "attacks", "hostile-fleet.json"))
		if err != nil {
			t.Fatal(err)
		}
		s, _, err := snapshot.Decode(data, snapshot.DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	steps := []struct {
		name string
		snap *snapshot.Snapshot
	}{
		{"1-faults-first", loadExample(t, "small-faults.json")},
		{"2-healthy-resolves", loadExample(t, "small-healthy.json")},
		{"3-faults-reopen", loadExample(t, "small-faults.json")},
		{"4-hostile-fleet", hostile()},
	}
	for _, step := range steps {
		e.src = step.snap
		rep := e.run()
		rep.RunID = "RUN" // the only random field: a ULID
		got, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := filepath.Join("testdata", "golden", step.name+".json")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run with -update to create it)", path, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the run report differs from the golden file (run with -update and review the diff)\n got: %s", step.name, got)
		}
	}
}
