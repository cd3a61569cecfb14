//go:build !linux || !cgo

package store

// trimCHeap does nothing where glibc's malloc_trim is not known to exist.
func trimCHeap() {}

// sqliteMemoryUsed is not known here.
func sqliteMemoryUsed() int64 { return -1 }
