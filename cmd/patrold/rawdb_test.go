package main

import (
	"database/sql"
	"testing"
)

// rawDB opens a second handle on the store's file, for tests that write
// rows or schema the store has no method for; it closes with the test.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
