package findings

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// DismissedRetention is how long a dismissed (not suppressed) finding is
// kept after it was last seen.
const DismissedRetention = 30 * 24 * time.Hour

// SweepResult counts what a sweep did.
type SweepResult struct {
	Deleted    int64 `json:"deleted"`
	Reminded   int   `json:"reminded"`
	Unsilenced int   `json:"unsilenced"`
	Silenced   int   `json:"silenced"`
}

// Sweep does the time-driven housekeeping in one transaction: retention
// (resolved findings after resolvedRetention, dismissed ones 30 days after
// last seen; suppressed ones are kept), will_fix_later reminders after 7
// days, and re-evaluation of silences (a finding whose silence expired is
// published if it never was, or if its severity moved while silenced).
func (s *Store) Sweep(ctx context.Context, now time.Time, resolvedRetention time.Duration, policy PublishPolicy) (SweepResult, error) {
	var res SweepResult
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, `DELETE FROM findings WHERE suppressed = 0 AND (
			(status = 'resolved' AND resolved_at < ?) OR (dismissed_reason != '' AND last_seen_at < ?))`,
			fmtTime(now.Add(-resolvedRetention)), fmtTime(now.Add(-DismissedRetention)))
		if err != nil {
			return fmt.Errorf("retention: %w", err)
		}
		res.Deleted, _ = r.RowsAffected()
		silences, err := listSilences(ctx, tx, now, true)
		if err != nil {
			return err
		}
		// With silences in force every active finding is re-evaluated;
		// otherwise only those still marked silenced and the reminders due.
		where := "WHERE status = 'active'"
		args := []any{}
		if len(silences) == 0 {
			where += " AND (silenced = 1 OR (dismissed_reason = ? AND dismissed_at <= ?))"
			args = append(args, DismissWillFixLater, fmtTime(now.Add(-WillFixLaterRemind)))
		}
		active, err := queryFindings(ctx, tx, where, args...)
		if err != nil {
			return err
		}
		ob, err := newOutboxWriter(ctx, tx, now)
		if err != nil {
			return err
		}
		defer ob.close()
		for i := range active {
			f := active[i]
			var ev Event
			changed := false
			if f.DismissedReason == DismissWillFixLater && f.DismissedAt != nil && now.Sub(*f.DismissedAt) >= WillFixLaterRemind {
				f.DismissedReason, f.DismissedAt = "", nil
				ev = Event{FindingID: f.ID, At: now, Kind: "reminder", Detail: "will_fix_later dismissal lifted after 7 days"}
				res.Reminded++
				changed = true
			}
			silenced := SilenceSet(silences).Silenced(&f)
			if silenced != f.Silenced {
				f.Silenced, changed = silenced, true
				if silenced {
					res.Silenced++
				} else {
					res.Unsilenced++
				}
			}
			if !changed {
				continue
			}
			nf, d := policy.Decide(Change{Finding: f, Kind: ChangeUnchanged}, f.Silenced, now)
			if ev.Kind == "reminder" && !d.Publish && !nf.Silenced {
				d = Decision{Publish: true, Event: EventRepeated, Reason: ReasonRepeat}
				t := now
				nf.LastPublishedAt, nf.LastPublishedSeverity, nf.LastPublishedEvent = &t, nf.Severity, d.Event
			}
			if err := writeOne(ctx, tx, &nf, &ev); err != nil {
				return err
			}
			if d.Publish {
				if err := ob.add(ctx, findingEvent(&nf, d, "", now)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("sweep: %w", err)
	}
	return res, nil
}
