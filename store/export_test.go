package store

// The relay's queries, for the query-plan test.
const (
	PendingEventsSQL = pendingEventsSQL
	PendingCountSQL  = pendingCountSQL
)
