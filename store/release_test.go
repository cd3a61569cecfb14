package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store"
)

// TestReleaseMemoryEmptiesTheCommitCache: after a commit of 5k findings
// the commit connection's page cache holds megabytes; ReleaseMemory
// gives them back (SQLite's memory in use falls below a quarter of what
// the commit left), and the next commit still sees every finding.
func TestReleaseMemoryEmptiesTheCommitCache(t *testing.T) {
	if store.SQLiteMemoryUsed() < 0 {
		t.Skip("SQLite's memory is not measurable on this platform")
	}
	st := openStore(t)
	obs := make([]findings.Observation, 5000)
	for i := range obs {
		obs[i] = fobs(fmt.Sprintf("vm/%d", i), "high_cpu", "warning", fmt.Sprintf("cpu_percent_avg %d.5 over 900 s", 80+i%20))
	}
	at := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	commit(t, st, at, true, obs...)
	held := store.SQLiteMemoryUsed()
	if err := st.ReleaseMemory(context.Background()); err != nil {
		t.Fatal(err)
	}
	left := store.SQLiteMemoryUsed()
	if held < 4<<20 || left > held/4 {
		t.Fatalf("SQLite held %d bytes after the commit, %d after ReleaseMemory (want at least 4 MiB, then at most a quarter)", held, left)
	}
	changes := commit(t, st, at.Add(time.Minute), true, obs...)
	unchanged := 0
	for _, c := range changes {
		if c.Kind == findings.ChangeUnchanged {
			unchanged++
		}
	}
	if len(changes) != len(obs) || unchanged != len(obs) {
		t.Fatalf("after the release: %d changes, %d unchanged, want %d of each", len(changes), unchanged, len(obs))
	}
}
