//go:build cgo

package store

import (
	"errors"

	"github.com/mattn/go-sqlite3"
)

// sqliteCorrupt says whether err carries SQLite's code for a malformed
// file. The driver's error type exists only in cgo builds.
func sqliteCorrupt(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrCorrupt || se.Code == sqlite3.ErrNotADB)
}
