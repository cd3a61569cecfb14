//go:build !cgo

package store

import (
	"errors"

	"github.com/mattn/go-sqlite3"
)

// connectPragmas: without cgo the SQLite driver is a stub that opens
// nothing; the store type-checks (go vet for other systems) but cannot
// run.
func connectPragmas(*sqlite3.SQLiteConn) error {
	return errors.New("store: built without cgo, SQLite is not available")
}
