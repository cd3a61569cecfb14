package findings

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

const runColumns = "id, trigger, status, analysis, started_at, finished_at, complete, report"

func scanRun(sc scanner) (RunRecord, error) {
	var r RunRecord
	var started string
	var finished sql.NullString
	var report string
	if err := sc.Scan(&r.ID, &r.Trigger, &r.Status, &r.Analysis, &started, &finished, &r.Complete, &report); err != nil {
		return r, err
	}
	r.StartedAt, r.FinishedAt, r.Report = parseTime(started), parseTimePtr(finished), json.RawMessage(report)
	return r, nil
}

// Runs returns the newest runs first, at most limit.
func (s *Store) Runs(ctx context.Context, limit int) ([]RunRecord, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+runColumns+" FROM runs ORDER BY started_at DESC, id DESC LIMIT ?", limit)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []RunRecord
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Run returns one run by id.
func (s *Store) Run(ctx context.Context, id string) (RunRecord, error) {
	r, err := scanRun(s.db.QueryRowContext(ctx, "SELECT "+runColumns+" FROM runs WHERE id = ?", id))
	if err == sql.ErrNoRows {
		return r, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	return r, err
}

// StartRun records a run as started (status "running"), so a crash leaves a
// trace that MarkInterrupted turns into an error at the next start.
func (s *Store) StartRun(ctx context.Context, r RunRecord) error {
	r.Status = "running"
	return s.withTx(ctx, func(tx *sql.Tx) error { return putRun(ctx, tx, r) })
}

// MarkInterrupted turns runs left "running" by a crash into errors with
// reason interrupted, and returns how many there were.
func (s *Store) MarkInterrupted(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET status = 'error', finished_at = ?,
		report = json_set(report, '$.status', 'error', '$.errors', json_array('interrupted'), '$.status_reasons', json_array('interrupted'))
		WHERE status = 'running'`, fmtTime(now))
	if err != nil {
		return 0, fmt.Errorf("mark interrupted runs: %w", err)
	}
	return res.RowsAffected()
}

// LastCompleteRun returns the finish time of the newest complete,
// non-error run, or nil.
func (s *Store) LastCompleteRun(ctx context.Context) (*time.Time, error) {
	var t sql.NullString
	err := s.db.QueryRowContext(ctx, "SELECT max(finished_at) FROM runs WHERE complete = 1 AND status NOT IN ('error','degraded','running')").Scan(&t)
	if err != nil {
		return nil, err
	}
	return parseTimePtr(t), nil
}

// Spent returns what model calls of runs started since since cost, in US
// dollars: the spend ledger for per-day and per-30-day budgets.
func (s *Store) Spent(since time.Time) (float64, error) {
	var v float64
	err := s.db.QueryRow("SELECT coalesce(sum(cost_usd), 0) FROM runs WHERE started_at >= ?", fmtTime(since)).Scan(&v)
	return v, err
}

// Exchange returns the recorded model exchange of a run ("" when none).
func (s *Store) Exchange(ctx context.Context, runID string) (json.RawMessage, error) {
	var ex string
	err := s.db.QueryRowContext(ctx, "SELECT exchange FROM runs WHERE id = ?", runID).Scan(&ex)
	if err == sql.ErrNoRows {
		return nil, fmt.Errorf("run %s: %w", runID, ErrNotFound)
	}
	return json.RawMessage(ex), err
}
