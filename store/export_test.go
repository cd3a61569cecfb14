package store

import (
	"maps"

	"database/sql"
	"time"

	"github.com/patrold/patrold/findings"
)

// The relay's queries, for the query-plan test.
const (
	PendingEventsSQL = pendingEventsSQL
	PendingCountSQL  = pendingCountSQL
	PendingKeysSQL   = pendingKeysSQL
)

// DB is the store's handle, for tests that inspect or break the schema.
func (s *Store) DB() *sql.DB { return s.db }

// MarshalForm is the check Enqueue uses to store data as it is.
var MarshalForm = marshalForm

// SetCheckpointEvery sets the checkpointer's interval for stores opened
// after it, and returns the function that restores it.
func SetCheckpointEvery(d time.Duration) (restore func()) {
	old := checkpointEvery
	checkpointEvery = d
	return func() { checkpointEvery = old }
}

// AnySpecial and FormSpecial are marshalForm's word and byte tests.
var (
	AnySpecial  = anySpecial
	FormSpecial = &formSpecial
)

// DecodeTags reads a stored resource_tags column, for its fuzz test.
var DecodeTags = decodeTags

// DropActiveCache forgets the active findings kept between run commits:
// the next commit reads them, as a fresh process does.
func (s *Store) DropActiveCache() { s.active.take() }

// CachedActive is what the store keeps of its active findings between run
// commits (ok false: nothing).
func (s *Store) CachedActive() (map[string]findings.Finding, bool) {
	s.active.mu.Lock()
	defer s.active.mu.Unlock()
	if !s.active.held {
		return nil, false
	}
	return maps.Clone(s.active.val.byID), true
}

// SQLiteMemoryUsed is the memory SQLite holds, every connection together.
var SQLiteMemoryUsed = sqliteMemoryUsed

// SetWALLimit sets the write-ahead log bound (the checkpointer's
// threshold; journal_size_limit stays WALLimit) and returns the function
// that restores it.
func SetWALLimit(n int64) (restore func()) {
	old := walLimit
	walLimit = n
	return func() { walLimit = old }
}
