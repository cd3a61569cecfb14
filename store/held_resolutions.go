package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/patrold/patrold/findings"
)

// heldResolutionsSQL selects the findings stored resolved whose
// resolution subscribers never got: published open (last event not
// resolved, dismissed or suppressed), neither dismissed, suppressed nor
// flapping (flapping holds its resolutions on purpose). Before a
// resolution was published whatever held the finding, a silence left
// such rows, and their alerts kept firing.
const heldResolutionsSQL = `WHERE status = 'resolved' AND last_published_at IS NOT NULL
	AND last_published_event NOT IN ('` + findings.EventResolved + `', '` + findings.EventDismissed + `', '` + findings.EventSuppressed + `')
	AND suppressed = 0 AND dismissed_reason = '' AND flapping = 0`

// PublishHeldResolutions publishes the resolution of every finding
// heldResolutionsSQL selects, once: each is then recorded as published
// resolved. It returns their ids.
func (s *Store) PublishHeldResolutions(ctx context.Context, now time.Time) ([]string, error) {
	var ids []string
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		list, err := queryFindings(ctx, tx, heldResolutionsSQL)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return nil
		}
		ob, err := newOutboxWriter(ctx, tx, now)
		if err != nil {
			return err
		}
		defer ob.close()
		for i := range list {
			f := list[i]
			at := now
			if f.ResolvedAt != nil {
				at = *f.ResolvedAt
			}
			d := findings.Decision{Publish: true, Event: findings.EventResolved, Reason: findings.ReasonResolved}
			t := now
			f.LastPublishedAt, f.LastPublishedSeverity, f.LastPublishedEvent = &t, f.Severity, d.Event
			if err := writeOne(ctx, tx, &f, nil); err != nil {
				return err
			}
			if err := ob.add(ctx, findings.FindingEvent(&f, d, f.LastRunID, at)); err != nil {
				return err
			}
			ids = append(ids, f.ID)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("publish held resolutions: %w", err)
	}
	return ids, nil
}
