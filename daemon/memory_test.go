package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/demo"
)

// heapFree is the Go heap's memory that is free and not yet returned to
// the OS.
func heapFree() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestRunGivesItsPeakBack: when a run has ended (RunNow returns after the
// release), the Go heap keeps almost no free memory from the OS. The
// run's peak (a 50k-resource fleet decoded, detected and committed, tens
// of MB) is not kept resident until the next run.
func TestRunGivesItsPeakBack(t *testing.T) {
	dir := t.TempDir()
	data, err := snapshot.Encode(demo.Generate(demo.Options{Seed: 1, Resources: 50_000, FaultRate: 0.1}, time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "snapshot.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	data = nil
	d := start(t, testConfig(t, dir, "", ""))
	for i := range 2 { // the first run files every finding, the second re-detects them
		if _, err := d.RunNow(context.Background(), patrol.TriggerManual); err != nil {
			t.Fatal(err)
		}
		if free := heapFree(); free > 4<<20 {
			t.Fatalf("run %d: the heap keeps %d free bytes from the OS after the run (want at most 4 MiB)", i+1, free)
		}
	}
}
