package snapshot_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/demo"
)

// Bytes a decoded resource of a generated fleet (1 % faults, ~363 bytes of
// document each) may cost. The first is what stays live: the Resource
// itself is 312 bytes, its metrics, backup, smart and text the rest. The
// second is what the decode allocates in all. Measured 415 and 427 with
// the one decoder on encoding/json/v2 (414 and 437 with the hand-written
// parser it replaced). With the metrics in a map, they were 554 and 612.
// The quorum and ha pointers added 16 bytes: 429 and 439 measured. The
// guest pointer (lock, tasks) 8 more: 439 and 451. The replication
// pointer 8 more: 445 and 456. The
// certificate pointer 8 more: 453 and 464. The updates pointer 8 more:
// 461 and 471. The backup's verify pointer (a larger size class for
// each backup) 12 more: 473 and 483.
const (
	maxLivePerResource  = 477
	maxAllocPerResource = 488
)

// TestDecodedSizePerResource keeps a large fleet's decoded snapshot small
// (a run over a million resources peaks under twice the file's size in
// RSS, docs/PATROL_ARCHITECTURE.md): the heap a decode keeps, and the
// bytes it allocates, per resource of a 10k fleet.
func TestDecodedSizePerResource(t *testing.T) {
	data, err := snapshot.Encode(demo.Generate(demo.Options{Seed: 1, Resources: 10_000, FaultRate: 0.01}, time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)))
	if err != nil {
		t.Fatal(err)
	}
	var before, decoded, after runtime.MemStats
	// Twice: the encoder's pooled buffers survive one collection.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	snap, probs, err := snapshot.Decode(data, snapshot.DecodeOptions{})
	runtime.ReadMemStats(&decoded)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if err != nil || len(probs) != 0 || len(snap.Resources) != 10_000 {
		t.Fatalf("decode: %v, %d problems, %d resources", err, len(probs), len(snap.Resources))
	}
	n := uint64(len(snap.Resources))
	alloc := (decoded.TotalAlloc - before.TotalAlloc) / n
	live := (after.HeapAlloc - min(before.HeapAlloc, after.HeapAlloc)) / n
	runtime.KeepAlive(snap)
	runtime.KeepAlive(data)
	t.Logf("a decoded resource keeps %d bytes and allocates %d", live, alloc)
	if live > maxLivePerResource || alloc > maxAllocPerResource {
		t.Fatalf("a decoded resource keeps %d bytes (at most %d) and allocates %d (at most %d)",
			live, maxLivePerResource, alloc, maxAllocPerResource)
	}
}
