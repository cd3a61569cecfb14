package contracts

import (
	"encoding/json"
	"time"
)

// OutboxEvent is one event waiting to be published (or already published).
// Rows are written in the same SQLite transaction as the state change that
// caused them; the bus relay publishes them in Seq order.
type OutboxEvent struct {
	Seq        int64           `json:"seq"`         // monotonic, publication order
	ID         string          `json:"id"`          // CloudEvents id and Nats-Msg-Id
	Subject    string          `json:"subject"`     // relative to the prefix, e.g. "findings.opened.warning"
	Type       string          `json:"type"`        // e.g. "patrold.finding.opened"
	ResourceID string          `json:"resource_id"` // CloudEvents subject; "" when none
	Time       time.Time       `json:"time"`
	Data       json.RawMessage `json:"data"`
	SentAt     *time.Time      `json:"sent_at,omitempty"`
}
