package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store/records"
)

// StartSession records a session as running (a resumed session again).
func (s *Store) StartSession(ctx context.Context, id, findingID string, attempt int, driver string, startedAt time.Time) error {
	_, err := s.exec(ctx, `INSERT INTO remediation_sessions (id, finding_id, attempt, driver, started_at)
		VALUES (?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET outcome = '', finished_at = NULL`,
		id, findingID, attempt, driver, fmtTime(startedAt))
	if err != nil {
		return fmt.Errorf("record session: %w", err)
	}
	return nil
}

// FinishSession stores a session's end.
//
// A session ends once: a second end (a retry after a lost answer) changes
// nothing, so its spend is never counted twice. A negative or non-finite
// cost is refused.
func (s *Store) FinishSession(ctx context.Context, id string, end records.SessionEnd) error {
	if end.CostUSD < 0 || math.IsNaN(end.CostUSD) || math.IsInf(end.CostUSD, 0) {
		return fmt.Errorf("store session %s: cost_usd: %g must be a non-negative number", id, end.CostUSD)
	}
	_, err := s.exec(ctx, `UPDATE remediation_sessions SET outcome = ?, summary = ?, finished_at = ?, transcript = ?,
		exchange = CASE WHEN ? = '' THEN exchange ELSE ? END, cost_usd = cost_usd + ? WHERE id = ? AND finished_at IS NULL`,
		end.Outcome, end.Summary, fmtTime(end.FinishedAt), string(end.Transcript), string(end.Exchange), string(end.Exchange), end.CostUSD, id)
	if err != nil {
		return fmt.Errorf("store session %s: %w", id, err)
	}
	return nil
}

// Session returns one stored session (findings.ErrNotFound when none).
func (s *Store) Session(ctx context.Context, id string) (records.SessionRecord, error) {
	return s.querySession(ctx, "WHERE id = ?", id)
}

// LastSession returns the most recent session of a finding's attempt.
func (s *Store) LastSession(ctx context.Context, findingID string, attempt int) (records.SessionRecord, error) {
	return s.querySession(ctx, "WHERE finding_id = ? AND attempt = ? ORDER BY started_at DESC, id DESC LIMIT 1", findingID, attempt)
}

func (s *Store) querySession(ctx context.Context, where string, args ...any) (records.SessionRecord, error) {
	var r records.SessionRecord
	var started string
	var finished sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT id, finding_id, attempt, driver, outcome, summary, started_at, finished_at, transcript
		FROM remediation_sessions `+where, args...).Scan(&r.ID, &r.FindingID, &r.Attempt, &r.Driver, &r.Outcome, &r.Summary, &started, &finished, &r.Transcript)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("session: %w", findings.ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("load session: %w", err)
	}
	r.StartedAt, r.FinishedAt = parseTime(started), parseTimePtr(finished)
	return r, nil
}

// SessionExchange returns the recorded model exchange of a session ("" when
// it made no model calls; findings.ErrNotFound when there is no session).
func (s *Store) SessionExchange(ctx context.Context, id string) (string, error) {
	var raw string
	err := s.db.QueryRowContext(ctx, `SELECT exchange FROM remediation_sessions WHERE id = ?`, id).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("session %s: %w", id, findings.ErrNotFound)
	}
	return raw, err
}

// SessionCost is what a session's model calls cost so far, in US dollars.
func (s *Store) SessionCost(ctx context.Context, id string) (float64, error) {
	var v float64
	err := s.db.QueryRowContext(ctx, `SELECT cost_usd FROM remediation_sessions WHERE id = ?`, id).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("session %s: %w", id, findings.ErrNotFound)
	}
	return v, err
}

// SessionSpent is what the model calls of sessions started since since
// cost, leaving out the session except (the one asking).
func (s *Store) SessionSpent(ctx context.Context, since time.Time, except string) (float64, error) {
	var v float64
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(cost_usd), 0) FROM remediation_sessions WHERE started_at >= ? AND id != ?`,
		fmtTime(since), except).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("session spend: %w", err)
	}
	return v, nil
}

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }
