//go:build linux && cgo

package store

/*
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

// SQLite's own (go-sqlite3's amalgamation), linked into the same binary.
extern long long sqlite3_memory_used(void);

// fix_thresholds sets glibc's mmap and trim thresholds to where glibc
// starts them (128 kB). Setting them stops glibc from raising them
// after a large block is freed.
static void fix_thresholds(void) {
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	mallopt(M_TRIM_THRESHOLD, 128 * 1024);
}

// probe_alloc_free allocates n bytes, writes them and frees them.
static void probe_alloc_free(size_t n) {
	char *p = malloc(n);
	if (p) {
		memset(p, 1, n);
		free(p);
	}
}

// probe_mapped reports whether a block of n bytes is given its own
// mapping (mallinfo2's hblkhd grows while it is held).
static int probe_mapped(size_t n) {
	size_t before = mallinfo2().hblkhd;
	char *p = malloc(n);
	if (!p) {
		return 0;
	}
	memset(p, 1, n);
	int mapped = mallinfo2().hblkhd >= before + n;
	free(p);
	return mapped;
}

// probe_kept allocates 4096 blocks of 2 kB, frees them, and returns how
// many bytes more the arenas hold from the system than before.
static long long probe_kept(void) {
	enum { count = 4096, size = 2048 };
	static char *blocks[count];
	long long before = (long long)mallinfo2().arena;
	for (int i = 0; i < count; i++) {
		blocks[i] = malloc(size);
		if (blocks[i]) {
			memset(blocks[i], 1, size);
		}
	}
	for (int i = count - 1; i >= 0; i--) {
		free(blocks[i]);
	}
	return (long long)mallinfo2().arena - before;
}
*/
import "C"

// trimCHeap returns the C heap's free memory to the OS (glibc's
// malloc_trim): SQLite frees into it, and glibc keeps what it freed.
// It first fixes glibc's thresholds (fix_thresholds), so that from then
// on what SQLite frees goes back as it is freed: a block of 128 kB or
// more is mapped alone and unmapped when freed, and an arena shrinks
// once 128 kB at its top are free. On its own glibc raises both after
// freeing a large block (up to 32 and 64 MB): a steady 100k run frees
// one of 14 MB, and the arenas then kept 14-28 MB free but resident
// after each run, which malloc_trim does not return from an arena other
// than the main one.
func trimCHeap() {
	C.fix_thresholds()
	C.malloc_trim(0)
}

// sqliteMemoryUsed is the memory SQLite holds now, every connection of
// the process together (sqlite3_memory_used).
func sqliteMemoryUsed() int64 { return int64(C.sqlite3_memory_used()) }

// cHeapProbe is what probeCHeap measured (tests only).
type cHeapProbe struct {
	Mapped bool  // a 1 MB block was mapped alone
	Kept   int64 // bytes the arenas kept after 8 MB of small blocks were freed
}

// probeCHeap measures the C allocator: 8 MB of small blocks freed, then
// a 1 MB block (which comes from an arena's free top, if it kept one)
// (tests only).
func probeCHeap() cHeapProbe {
	kept := int64(C.probe_kept())
	return cHeapProbe{Mapped: C.probe_mapped(1<<20) != 0, Kept: kept}
}

// raiseCHeapThresholds frees a 16 MB block, which raises glibc's
// thresholds unless they are fixed (tests only).
func raiseCHeapThresholds() { C.probe_alloc_free(16 << 20) }
