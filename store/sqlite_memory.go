//go:build cgo

package store

// #include <stdint.h>
// extern long long sqlite3_memory_used(void);
import "C"

// sqliteMemoryUsed is the memory SQLite holds now, every connection of
// the process together (tests read it through export_test.go).
func sqliteMemoryUsed() int64 { return int64(C.sqlite3_memory_used()) }
