package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/patrold/patrold/findings"
)

// StateCounts counts findings by derived loop state and severity at now,
// reading only the columns the derivation needs (metrics scrape this).
func (s *Store) StateCounts(ctx context.Context, now time.Time) ([]findings.StateCount, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT severity, status, suppressed, snoozed_until, dismissed_reason,
		investigation_status, last_outcome, count(*) FROM findings
		GROUP BY severity, status, suppressed, snoozed_until, dismissed_reason, investigation_status, last_outcome`)
	if err != nil {
		return nil, fmt.Errorf("count findings: %w", err)
	}
	defer rows.Close()
	acc := map[[2]string]int{}
	for rows.Next() {
		var f findings.Finding
		var snoozed sql.NullString
		var n int
		if err := rows.Scan(&f.Severity, &f.Status, &f.Suppressed, &snoozed, &f.DismissedReason, &f.InvestigationStatus, &f.LastOutcome, &n); err != nil {
			return nil, err
		}
		f.SnoozedUntil = parseTimePtr(snoozed)
		acc[[2]string{findings.LoopStateAt(&f, now), string(f.Severity)}] += n
	}
	out := make([]findings.StateCount, 0, len(acc))
	for k, n := range acc {
		out = append(out, findings.StateCount{State: k[0], Severity: findings.Severity(k[1]), Count: n})
	}
	return out, rows.Err()
}
