package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/signals"
)

// RecordUsage appends the samples taken at at to their resources' series,
// in one transaction:
//   - a resource whose newest point is less than interval before at (or
//     after it) gets no new point, so a run every minute stores no more
//     than a run every few hours;
//   - points older than at - retention are deleted.
//
// The newest point of each sampled resource's series is read in one query
// (usage_series).
func (s *Store) RecordUsage(ctx context.Context, at time.Time, samples []signals.UsageSample, interval, retention time.Duration) error {
	unix := at.Unix()
	after := unix - int64(interval/time.Second)
	cutoff := unix - int64(retention/time.Second)
	return s.withTx(ctx, func(tx *sql.Tx) error {
		last, err := newestPoints(ctx, tx, samples)
		if err != nil {
			return fmt.Errorf("record usage: %w", err)
		}
		var ins *sql.Stmt
		for i, sm := range samples {
			if last[i] > after {
				continue
			}
			if ins == nil {
				// A duplicate of a sample in the same call, or a point
				// already at exactly at, is ignored: the first point stays.
				if ins, err = tx.PrepareContext(ctx, "INSERT INTO usage_points(resource_id, at, value) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"); err != nil {
					return fmt.Errorf("record usage: %w", err)
				}
				defer ins.Close()
			}
			if _, err := ins.ExecContext(ctx, sm.ResourceID, unix, sm.Value); err != nil {
				return fmt.Errorf("record usage of %s: %w", sm.ResourceID, err)
			}
			last[i] = max(last[i], unix)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM usage_points WHERE at < ?", cutoff); err != nil {
			return fmt.Errorf("prune usage: %w", err)
		}
		return nil
	})
}

// noPoint is the newest point of a resource without a series.
const noPoint = math.MinInt64

// newestPoints reads the newest point of each sample's series from
// usage_series, in one query over a JSON array of their ids (noPoint for
// a sample without a series).
func newestPoints(ctx context.Context, tx *sql.Tx, samples []signals.UsageSample) ([]int64, error) {
	last := make([]int64, len(samples))
	for i := range last {
		last[i] = noPoint
	}
	if len(samples) == 0 {
		return last, nil
	}
	ids := make([]string, len(samples))
	for i, sm := range samples {
		ids[i] = sm.ResourceID
	}
	rows, err := tx.QueryContext(ctx, `SELECT j.key, s.last_at FROM json_each(?1) AS j
		JOIN usage_series AS s ON s.resource_id = j.value`, string(jsonArray(ids)))
	if err != nil {
		return nil, fmt.Errorf("newest points: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var i int
		var at int64
		if err := rows.Scan(&i, &at); err != nil {
			return nil, fmt.Errorf("newest points: %w", err)
		}
		if i < 0 || i >= len(last) {
			return nil, fmt.Errorf("newest points: index %d of %d samples", i, len(last))
		}
		last[i] = at
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("newest points: %w", err)
	}
	return last, nil
}

// jsonArray is the JSON array of ids.
func jsonArray(ids []string) []byte {
	b := make([]byte, 0, 2+len(ids)*24)
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = contracts.AppendJSONString(b, id)
	}
	return append(b, ']')
}

// UsageReady returns, in id order, the digests of the series of the
// resources among ids that hold at least points points spanning at least
// span: the only ones a forecast can judge. One query over usage_series
// (what each series is, kept by triggers: migration 00019), not over the
// points:
//   - the candidates are the series whose first point is at least span
//     before the newest point of all (found on the index by time), so a
//     young history reads next to nothing;
//   - a digest's version moves with every change to its series' points.
func (s *Store) UsageReady(ctx context.Context, ids []string, points int, span time.Duration) ([]signals.SeriesDigest, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	rows, err := s.db.QueryContext(ctx, `SELECT resource_id, points, first_at, last_at, version FROM usage_series
		WHERE first_at <= (SELECT max(at) FROM usage_points) - ?2 AND points >= ?1 AND last_at - first_at >= ?2`,
		points, int64(span/time.Second))
	if err != nil {
		return nil, fmt.Errorf("usage ready: %w", err)
	}
	defer rows.Close()
	var out []signals.SeriesDigest
	for rows.Next() {
		var d signals.SeriesDigest
		var first, last int64
		if err := rows.Scan(&d.ResourceID, &d.Points, &first, &last, &d.Version); err != nil {
			return nil, fmt.Errorf("usage ready: %w", err)
		}
		d.First, d.Last = time.Unix(first, 0).UTC(), time.Unix(last, 0).UTC()
		if want[d.ResourceID] {
			out = append(out, d)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage ready: %w", err)
	}
	// In id order; the index gives them by first time (an ORDER BY would
	// make SQLite scan the table instead).
	slices.SortFunc(out, func(a, b signals.SeriesDigest) int { return strings.Compare(a.ResourceID, b.ResourceID) })
	return out, nil
}

// UsageSeries returns the stored series of the resources named, each in
// time order; a resource without points is absent. Only their points are
// read (the forecast names the ready ones: UsageReady).
func (s *Store) UsageSeries(ctx context.Context, ids []string) (map[string][]signals.Point, error) {
	out := make(map[string][]signals.Point)
	if len(ids) == 0 {
		return out, nil
	}
	// Only the series asked for are read, in key order.
	rows, err := s.db.QueryContext(ctx, `SELECT resource_id, at, value FROM usage_points
		WHERE resource_id IN (SELECT value FROM json_each(?)) ORDER BY resource_id, at`, string(jsonArray(ids)))
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
		out[id] = append(out[id], signals.Point{At: time.Unix(at, 0).UTC(), Value: v})
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
