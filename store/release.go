package store

import (
	"context"
	"fmt"
)

// ReleaseMemory gives back what a run commit left cached outside the Go
// heap: the pages the commit connection's page cache holds (up to
// CommitCacheKiB; PRAGMA shrink_memory) and the memory the C allocator
// keeps free after SQLite freed it (trimCHeap, which also has the
// allocator give back from then on what SQLite frees). The next commit reads
// its pages again from the file (the OS page cache, as a fresh
// connection would). A daemon calls it after each run (patrol's
// Options.Release).
func (s *Store) ReleaseMemory(ctx context.Context) error {
	_, err := s.commitDB.ExecContext(ctx, "PRAGMA shrink_memory")
	trimCHeap()
	if err != nil {
		return fmt.Errorf("release memory: %w", err)
	}
	return nil
}
