package findings

import "github.com/patrold/patrold/contracts"

// OutboxEvent is one event waiting to be published (or already published);
// the row type is declared by package contracts, shared with the bus relay.
type OutboxEvent = contracts.OutboxEvent
