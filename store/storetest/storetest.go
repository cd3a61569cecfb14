// Package storetest helps tests of other packages look under the store:
// a second SQLite handle on the store's file, for tests that write rows or
// schema the store has no method for (a forged row, a failing trigger).
// Only tests import it; it belongs to the store, the one owner of SQL.
package storetest

import (
	"database/sql"
	"testing"
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
