package assistant

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/patrold/patrold/contracts"
)

// ApprovalEventData is the data of a patrold.approval.<event> CloudEvent.
type ApprovalEventData struct {
	Event    contracts.ApprovalEvent `json:"event"`
	Approval Approval                `json:"approval"`
}

// ApprovalEventRow builds the event row for one approval lifecycle event:
// subject approvals.<event>, type patrold.approval.<event>, the resource as
// the CloudEvents subject. Its id (approval id and event) makes a
// republished event a JetStream duplicate.
func ApprovalEventRow(event contracts.ApprovalEvent, ap Approval, now time.Time) (contracts.OutboxEvent, error) {
	subject, typ, err := contracts.ApprovalSubject(event)
	if err != nil {
		return contracts.OutboxEvent{}, err
	}
	data, err := json.Marshal(ApprovalEventData{Event: event, Approval: ap})
	if err != nil {
		return contracts.OutboxEvent{}, fmt.Errorf("encode %s: %w", typ, err)
	}
	return contracts.OutboxEvent{ID: ap.ID + "-" + string(event), Subject: subject, Type: typ,
		ResourceID: ap.ResourceID, Time: now.UTC(), Data: data}, nil
}

// publishApproval sends an approval lifecycle event (no Publisher: none).
func (a *Assistant) publishApproval(ctx context.Context, event contracts.ApprovalEvent, ap Approval, now time.Time) error {
	a.metrics.approval(event)
	if a.opts.Publisher == nil {
		return nil
	}
	row, err := ApprovalEventRow(event, ap, now)
	if err != nil {
		return err
	}
	if err := a.opts.Publisher.Publish(ctx, row); err != nil {
		return fmt.Errorf("publish approval %s %s: %w", ap.ID, event, err)
	}
	return nil
}
