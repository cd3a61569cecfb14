//go:build linux && cgo

package store

/*
#include <malloc.h>

// SQLite's own (go-sqlite3's amalgamation), linked into the same binary.
extern long long sqlite3_memory_used(void);
*/
import "C"

// trimCHeap returns the C heap's free memory to the OS (glibc's
// malloc_trim): SQLite frees into it, and glibc keeps what it freed.
func trimCHeap() { C.malloc_trim(0) }

// sqliteMemoryUsed is the memory SQLite holds now, every connection of
// the process together (sqlite3_memory_used).
func sqliteMemoryUsed() int64 { return int64(C.sqlite3_memory_used()) }
