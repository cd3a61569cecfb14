package store

import (
	"context"
	"database/sql"
	"fmt"
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
// (usage_series), or, when the call samples the resources of the last one
// and nothing else changed the history since, taken from what that call
// left (usage_kept.go): a run inside the interval then reads and writes
// nothing but the prune.
func (s *Store) RecordUsage(ctx context.Context, at time.Time, samples []signals.UsageSample, interval, retention time.Duration) error {
	unix := at.Unix()
	after := unix - int64(interval/time.Second)
	cutoff := unix - int64(retention/time.Second)
	kept := s.usage.take()
	var left usageState
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		v, err := usageVersion(ctx, tx)
		if err != nil {
			return fmt.Errorf("record usage: %w", err)
		}
		last, reused := kept.last, kept.version == v && kept.same(samples)
		if !reused {
			s.usage.reads.Add(1)
			if last, err = newestPoints(ctx, tx, samples); err != nil {
				return fmt.Errorf("record usage: %w", err)
			}
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
		// A series whose newest point was pruned is gone.
		for i := range last {
			if last[i] < cutoff {
				last[i] = noPoint
			}
		}
		if v, err = usageVersion(ctx, tx); err != nil {
			return fmt.Errorf("record usage: %w", err)
		}
		if reused { // the same samples: their ids are kept already
			left = kept
			left.version = v
		} else {
			left = keptState(samples, last, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.usage.put(left)
	return nil
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
