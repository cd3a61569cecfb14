package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/patrold/patrold/signals"
)

// RecordUsage appends the samples taken at at to their resources' series,
// in one transaction:
//   - a resource whose newest point is less than interval before at (or
//     after it) gets no new point, so a run every minute stores no more
//     than a run every few hours;
//   - points older than at - retention are deleted.
func (s *Store) RecordUsage(ctx context.Context, at time.Time, samples []signals.UsageSample, interval, retention time.Duration) error {
	unix := at.Unix()
	return s.withTx(ctx, func(tx *sql.Tx) error {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO usage_points(resource_id, at, value)
			SELECT ?1, ?2, ?3 WHERE NOT EXISTS (SELECT 1 FROM usage_points WHERE resource_id = ?1 AND at > ?4)`)
		if err != nil {
			return fmt.Errorf("record usage: %w", err)
		}
		defer ins.Close()
		after := unix - int64(interval/time.Second)
		for _, sm := range samples {
			if _, err := ins.ExecContext(ctx, sm.ResourceID, unix, sm.Value, after); err != nil {
				return fmt.Errorf("record usage of %s: %w", sm.ResourceID, err)
			}
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM usage_points WHERE at < ?", unix-int64(retention/time.Second)); err != nil {
			return fmt.Errorf("prune usage: %w", err)
		}
		return nil
	})
}

// UsageSeries returns the stored series of the resources named, each in
// time order; a resource without points is absent.
func (s *Store) UsageSeries(ctx context.Context, ids []string) (map[string][]signals.Point, error) {
	out := make(map[string][]signals.Point)
	if len(ids) == 0 {
		return out, nil
	}
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	// One pass over the table in key order: cheaper than a query per
	// resource when most resources are asked for.
	rows, err := s.db.QueryContext(ctx, "SELECT resource_id, at, value FROM usage_points ORDER BY resource_id, at")
	if err != nil {
		return nil, fmt.Errorf("usage series: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var at int64
		var v float64
		if err := rows.Scan(&id, &at, &v); err != nil {
			return nil, fmt.Errorf("usage series: %w", err)
		}
		if want[id] {
			out[id] = append(out[id], signals.Point{At: time.Unix(at, 0).UTC(), Value: v})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage series: %w", err)
	}
	return out, nil
}

// HasUsage reports whether any usage point is stored.
func (s *Store) HasUsage(ctx context.Context) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM usage_points)").Scan(&n)
	return n == 1, err
}
