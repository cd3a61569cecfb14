package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/store"
)

// bigRows are n outbox rows of about 1 KB.
func bigRows(n int) []findings.OutboxEvent {
	pad := strings.Repeat("x", 1000)
	rows := make([]findings.OutboxEvent, n)
	for i := range rows {
		rows[i] = findings.OutboxEvent{ID: fmt.Sprintf("big-%05d", i), Subject: "runs.completed", Type: "patrold.run.completed",
			Time: sentT0, Data: json.RawMessage(`{"pad":"` + pad + `"}`)}
	}
	return rows
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestCommitsLeaveTheCheckpointToTheCheckpointer: a commit far past
// SQLite's automatic checkpoint threshold (1000 pages) returns without
// copying the write-ahead log into the database file; the store's
// checkpointer does that in the background, and closing the store does
// the rest.
func TestCommitsLeaveTheCheckpointToTheCheckpointer(t *testing.T) {
	ctx := context.Background()
	t.Run("in the commit: none", func(t *testing.T) {
		defer store.SetCheckpointEvery(time.Hour)()
		path := filepath.Join(t.TempDir(), "p.db")
		st, err := store.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		before := fileSize(t, path)
		if err := st.Enqueue(ctx, bigRows(5000)...); err != nil {
			t.Fatal(err)
		}
		if after := fileSize(t, path); after != before {
			t.Fatalf("database file %d -> %d bytes: the commit checkpointed", before, after)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if after := fileSize(t, path); after < 5_000_000 {
			t.Fatalf("database file %d bytes after close, want the 5 MB committed", after)
		}
	})
	t.Run("in the background", func(t *testing.T) {
		defer store.SetCheckpointEvery(20 * time.Millisecond)()
		path := filepath.Join(t.TempDir(), "p.db")
		st, err := store.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if err := st.Enqueue(ctx, bigRows(5000)...); err != nil {
			t.Fatal(err)
		}
		testkit.EventuallyState(t, 10*time.Second, "a background checkpoint grows the database file", func() (bool, string) {
			n := fileSize(t, path)
			return n >= 5_000_000, fmt.Sprintf("database file %d bytes", n)
		})
		if n, err := st.PendingCount(ctx); err != nil || n != 5000 {
			t.Fatalf("PendingCount = %d, %v; want 5000", n, err)
		}
	})
}

// TestWALStaysBoundedWhileApplying: a replica applies 1500 state changes
// (about 12 MB) back to back, as in a catch-up, while the background
// checkpointer runs. Passive checkpoints never catch up with a writer
// that keeps appending, so the log never starts over and grows by all
// that was applied. Checkpointed and truncated between changes, the log
// on disk stays within the bound plus one change, and the database holds
// every row.
func TestWALStaysBoundedWhileApplying(t *testing.T) {
	ctx := context.Background()
	const limit = 512 << 10
	defer store.SetWALLimit(limit)()
	defer store.SetCheckpointEvery(20 * time.Millisecond)()
	path := filepath.Join(t.TempDir(), "p.db")
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pad, _ := json.Marshal(strings.Repeat("x", 4000))
	const changes = 1500
	var most int64
	for i := 1; i <= changes; i++ {
		c := contracts.StateChange{Origin: "w", Epoch: 1, N: uint64(i), Table: "audit_events", Op: "upsert", RowID: int64(i),
			Row: map[string]json.RawMessage{"seq": json.RawMessage(fmt.Sprint(i)), "at": json.RawMessage(`"2026-12-01T09:00:00Z"`),
				"method": json.RawMessage(`"POST"`), "path": pad, "route": json.RawMessage(`"/x"`), "status": json.RawMessage(`200`)}}
		if _, err := st.ApplyState(ctx, uint64(i), "r", c, sentT0); err != nil {
			t.Fatal(err)
		}
		if _, wal := st.Size(); wal > most {
			most = wal
		}
	}
	// One change is about 8 KB of log (the row and its index pages).
	if most > limit+64<<10 {
		t.Fatalf("write-ahead log reached %d bytes, bound %d (the changes wrote about %d)", most, limit, changes*8000)
	}
	var n int
	if err := st.DB().QueryRowContext(ctx, "SELECT count(*) FROM audit_events").Scan(&n); err != nil || n != changes {
		t.Fatalf("audit rows %d, %v; want %d", n, err, changes)
	}
}
