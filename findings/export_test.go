package findings

// The relay's queries, for the query-plan test.
const (
	PendingEventsSQL = pendingEventsSQL
	PendingCountSQL  = pendingCountSQL
)

// MarshalForm is the check Enqueue uses to store data as it is.
var MarshalForm = marshalForm
