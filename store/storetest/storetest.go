// Package storetest helps tests of other packages look under the store.
// It gives a second SQLite handle on the store's file, for tests that
// write rows or schema the store has no method for (a forged row, a
// failing trigger). It drains the outbox as the relay would. Only tests
// import it; it belongs to the store, the one owner of SQL.
package storetest

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/patrold/patrold/store"
)

// RawDB opens a second handle on the store's file at path; it closes with
// the test.
func RawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// MarkAllSent reads every pending outbox row in windows of window rows and
// marks each window sent, as the relay does once a window is acknowledged.
func MarkAllSent(tb testing.TB, st *store.Store, window int) {
	tb.Helper()
	ctx := context.Background()
	for {
		rows, err := st.PendingEvents(ctx, window)
		if err != nil {
			tb.Fatal(err)
		}
		if len(rows) == 0 {
			return
		}
		seqs := make([]int64, len(rows))
		for i, r := range rows {
			seqs[i] = r.Seq
		}
		if err := st.MarkSent(ctx, seqs, time.Now()); err != nil {
			tb.Fatal(err)
		}
	}
}
