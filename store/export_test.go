package store

import (
	"database/sql"
	"time"
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
