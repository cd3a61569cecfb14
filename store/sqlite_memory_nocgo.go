//go:build !cgo

package store

// sqliteMemoryUsed is not known without cgo (and neither is SQLite).
func sqliteMemoryUsed() int64 { return -1 }
