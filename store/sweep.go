package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/patrold/patrold/findings"
)

// Sweep does the time-driven housekeeping in one transaction:
//   - retention: resolved findings after resolvedRetention, dismissed ones
//     30 days after last seen (suppressed ones are kept);
//   - will_fix_later reminders after 7 days;
//   - re-evaluation of silences: a finding whose silence expired is
//     published if it never was, or if its severity moved while silenced.
func (s *Store) Sweep(ctx context.Context, now time.Time, resolvedRetention time.Duration, policy findings.PublishPolicy) (findings.SweepResult, error) {
	var res findings.SweepResult
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		// Each condition walks its own partial index (migration 00012), so
		// a sweep with nothing due reads no finding.
		r, err := tx.ExecContext(ctx, `DELETE FROM findings WHERE id IN (
			SELECT id FROM findings INDEXED BY findings_sweep_resolved WHERE status = 'resolved' AND resolved_at < ? AND suppressed = 0
			UNION ALL
			SELECT id FROM findings INDEXED BY findings_sweep_dismissed WHERE dismissed_reason != '' AND suppressed = 0
				AND EXISTS (SELECT 1 FROM finding_seen s WHERE s.id = findings.id AND s.last_seen_at < ?))`,
			fmtTime(now.Add(-resolvedRetention)), fmtTime(now.Add(-findings.DismissedRetention)))
		if err != nil {
			return fmt.Errorf("retention: %w", err)
		}
		res.Deleted, _ = r.RowsAffected()
		silences, err := listSilences(ctx, tx, now, true)
		if err != nil {
			return err
		}
		orphans, err := orphanedInhibitions(ctx, tx)
		if err != nil {
			return err
		}
		// With silences in force every active finding is re-evaluated;
		// otherwise only those still marked silenced, those whose
		// inhibiting parent is no longer active, and the reminders due.
		where := "WHERE status = 'active'"
		args := []any{}
		if len(silences) == 0 {
			where = `WHERE id IN (SELECT id FROM findings INDEXED BY findings_sweep_silenced WHERE status = 'active' AND silenced = 1
				UNION ` + orphanedSQL + `
				UNION SELECT id FROM findings INDEXED BY findings_sweep_remind
				WHERE status = 'active' AND dismissed_reason = '` + findings.DismissWillFixLater + `' AND dismissed_at <= ?)`
			args = append(args, fmtTime(now.Add(-findings.WillFixLaterRemind)))
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
			var ev findings.Event
			changed := false
			if f.DismissedReason == findings.DismissWillFixLater && f.DismissedAt != nil && now.Sub(*f.DismissedAt) >= findings.WillFixLaterRemind {
				f.DismissedReason, f.DismissedAt = "", nil
				ev = findings.Event{FindingID: f.ID, At: now, Kind: "reminder", Detail: "will_fix_later dismissal lifted after 7 days"}
				res.Reminded++
				changed = true
			}
			if orphans[f.ID] {
				// Its cause resolved (or went) outside a run: it is
				// judged on its own again, as a silence's expiry does.
				f.InhibitedBy, changed = "", true
				res.Uninhibited++
			}
			silenced := findings.SilenceSet(silences).Silenced(&f)
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
			nf, d := policy.Decide(findings.Change{Finding: f, Kind: findings.ChangeUnchanged}, f.Held(), now)
			if ev.Kind == "reminder" && !d.Publish && !nf.Held() {
				d = findings.Decision{Publish: true, Event: findings.EventRepeated, Reason: findings.ReasonRepeat}
				t := now
				nf.LastPublishedAt, nf.LastPublishedSeverity, nf.LastPublishedEvent = &t, nf.Severity, d.Event
			}
			if err := writeOne(ctx, tx, &nf, &ev); err != nil {
				return err
			}
			if d.Publish {
				if err := ob.add(ctx, findings.FindingEvent(&nf, d, "", now)); err != nil {
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

// orphanedSQL selects the active findings inhibited by a finding that is
// no longer active (resolved by an operator or a fix, or deleted).
const orphanedSQL = `SELECT id FROM findings INDEXED BY findings_inhibited_by
	WHERE status = 'active' AND inhibited_by != ''
	AND NOT EXISTS (SELECT 1 FROM findings p WHERE p.id = findings.inhibited_by AND p.status = 'active')`

// orphanedInhibitions returns the ids orphanedSQL selects.
func orphanedInhibitions(ctx context.Context, tx *sql.Tx) (map[string]bool, error) {
	rows, err := tx.QueryContext(ctx, orphanedSQL)
	if err != nil {
		return nil, fmt.Errorf("orphaned inhibitions: %w", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}
