//go:build !cgo

package store

// sqliteCorrupt: without cgo there is no SQLite driver, so no error of
// its own can reach here.
func sqliteCorrupt(error) bool { return false }
