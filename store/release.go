package store

import (
	"context"
	"fmt"
)

// ReleaseMemory gives back the pages the commit connection's page cache
// holds after a run's commit (up to CommitCacheKiB; PRAGMA
// shrink_memory). The next commit reads its pages again from the file
// (the OS page cache, as a fresh connection would). A daemon calls it
// after each run (patrol's Options.Release).
func (s *Store) ReleaseMemory(ctx context.Context) error {
	_, err := s.commitDB.ExecContext(ctx, "PRAGMA shrink_memory")
	if err != nil {
		return fmt.Errorf("release memory: %w", err)
	}
	return nil
}
