package store

import "database/sql"

// The relay's queries, for the query-plan test.
const (
	PendingEventsSQL = pendingEventsSQL
	PendingCountSQL  = pendingCountSQL
)

// DB is the store's handle, for tests that inspect or break the schema.
func (s *Store) DB() *sql.DB { return s.db }

// MarshalForm is the check Enqueue uses to store data as it is.
var MarshalForm = marshalForm

// DecodeTags reads a stored resource_tags column, for its fuzz test.
var DecodeTags = decodeTags
