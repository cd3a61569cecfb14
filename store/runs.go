package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/patrold/patrold/findings"
)

const runColumns = "id, trigger, status, analysis, started_at, finished_at, complete, report"

func scanRun(sc scanner) (findings.RunRecord, error) {
	var r findings.RunRecord
	var started string
	var finished sql.NullString
	var report string
	if err := sc.Scan(&r.ID, &r.Trigger, &r.Status, &r.Analysis, &started, &finished, &r.Complete, &report); err != nil {
		return r, err
	}
	r.StartedAt, r.FinishedAt, r.Report = parseTime(started), parseTimePtr(finished), json.RawMessage(report)
	return r, nil
}

func encodeSummary(s *findings.RunSummary) string {
	if s == nil {
		return "{}"
	}
	c := *s
	if c.StatusReasons == nil {
		c.StatusReasons = []string{}
	}
	data, _ := json.Marshal(c)
	return string(data)
}

// runListColumns are what a run list reads, from run_list (the narrow
// copy of runs that triggers keep): never the report.
const runListColumns = "id, trigger, status, analysis, started_at, finished_at, complete, cost_usd, summary"

func scanRunSummary(sc scanner) (findings.RunRecord, error) {
	var r findings.RunRecord
	var started, summary string
	var finished sql.NullString
	if err := sc.Scan(&r.ID, &r.Trigger, &r.Status, &r.Analysis, &started, &finished, &r.Complete, &r.CostUSD, &summary); err != nil {
		return r, err
	}
	r.StartedAt, r.FinishedAt = parseTime(started), parseTimePtr(finished)
	if summary != "" && summary != "{}" {
		var sum findings.RunSummary
		if json.Unmarshal([]byte(summary), &sum) == nil {
			r.Summary = &sum
		}
	}
	return r, nil
}

// Runs returns the newest runs first, at most limit, with their summaries
// and without their reports.
func (s *Store) Runs(ctx context.Context, limit int) ([]findings.RunRecord, error) {
	out, _, err := s.runs(ctx, limit, nil)
	return out, err
}

// RunsPage returns one page of runs, newest first, with their summaries
// and without their reports, and the cursor of the next page.
func (s *Store) RunsPage(ctx context.Context, page findings.Page) ([]findings.RunRecord, string, error) {
	limit, key, err := page.Resolve("runs", 2)
	if err != nil {
		return nil, "", err
	}
	return s.runs(ctx, limit, key)
}

func (s *Store) runs(ctx context.Context, limit int, after []string) ([]findings.RunRecord, string, error) {
	where, args := "", []any{}
	if after != nil {
		where, args = "WHERE (started_at, id) < (?, ?) ", []any{after[0], after[1]}
	}
	rows, err := s.db.QueryContext(ctx, "SELECT "+runListColumns+" FROM run_list "+where+"ORDER BY started_at DESC, id DESC LIMIT ?", append(args, limit+1)...)
	if err != nil {
		return nil, "", fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []findings.RunRecord
	for rows.Next() {
		r, err := scanRunSummary(rows)
		if err != nil {
			return nil, "", err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = findings.NextCursor("runs", fmtTime(last.StartedAt), last.ID)
	}
	return out, next, nil
}

// Run returns one run by id.
func (s *Store) Run(ctx context.Context, id string) (findings.RunRecord, error) {
	r, err := scanRun(s.db.QueryRowContext(ctx, "SELECT "+runColumns+" FROM runs WHERE id = ?", id))
	if err == sql.ErrNoRows {
		return r, fmt.Errorf("run %s: %w", id, findings.ErrNotFound)
	}
	return r, err
}

// StartRun records a run as started (status "running"), so a crash leaves a
// trace that MarkInterrupted turns into an error at the next start.
func (s *Store) StartRun(ctx context.Context, r findings.RunRecord) error {
	r.Status = "running"
	return s.withTx(ctx, func(tx *sql.Tx) error { return putRun(ctx, tx, r) })
}

// FailRun marks a run that could not commit as an error at once, with
// reason commit_failed and the error, in its own small transaction (the
// run's own transaction was rolled back). It only touches a run still
// "running"; a run whose record is missing is recorded from r.
func (s *Store) FailRun(ctx context.Context, r findings.RunRecord, cause error, now time.Time) error {
	msg := cause.Error()
	return s.withTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE runs SET status = 'error', finished_at = ?, complete = 0,
			report = json_set(CASE WHEN json_valid(report) THEN report ELSE '{}' END, '$.status', 'error', '$.errors', json_array(?), '$.status_reasons', json_array('commit_failed')),
			summary = json_object('duration_ms', ?, 'status_reasons', json_array('commit_failed'), 'resources', 0, 'invalid_resources', 0,
				'signals', 0, 'findings', 0, 'resolved', 0, 'errors', 1)
			WHERE id = ? AND status = 'running'`, fmtTime(now), msg, now.Sub(r.StartedAt).Milliseconds(), r.ID)
		if err != nil {
			return fmt.Errorf("mark run %s failed: %w", r.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var exists int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM runs WHERE id = ?", r.ID).Scan(&exists); err != nil || exists > 0 {
				return err
			}
			r.Status, r.FinishedAt, r.Complete = "error", &now, false
			r.Summary = &findings.RunSummary{DurationMS: now.Sub(r.StartedAt).Milliseconds(), StatusReasons: []string{"commit_failed"}, Errors: 1}
			return putRun(ctx, tx, r)
		}
		return nil
	})
}

// MarkInterrupted turns runs left "running" by a crash into errors with
// reason interrupted, and returns how many there were.
func (s *Store) MarkInterrupted(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.exec(ctx, `UPDATE runs SET status = 'error', finished_at = ?,
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
	err := s.db.QueryRowContext(ctx, "SELECT max(finished_at) FROM run_list WHERE complete = 1 AND status NOT IN ('error','degraded','running')").Scan(&t)
	if err != nil {
		return nil, err
	}
	return parseTimePtr(t), nil
}

// LastSuccessfulRun returns the finish time of the newest run that did
// not end in error (degraded runs count: they looked at the fleet), or nil.
func (s *Store) LastSuccessfulRun(ctx context.Context) (*time.Time, error) {
	var t sql.NullString
	err := s.db.QueryRowContext(ctx, "SELECT max(finished_at) FROM run_list WHERE status NOT IN ('error','running')").Scan(&t)
	if err != nil {
		return nil, err
	}
	return parseTimePtr(t), nil
}

// Spent returns what model calls of runs and remediation sessions started
// since since cost, in US dollars: the spend ledger the per-day and
// per-30-day budgets read (model.budget bounds runs and sessions
// together).
func (s *Store) Spent(since time.Time) (float64, error) {
	var v float64
	err := s.db.QueryRow(`SELECT (SELECT coalesce(sum(cost_usd), 0) FROM run_list WHERE started_at >= ?) +
		(SELECT coalesce(sum(cost_usd), 0) FROM remediation_sessions WHERE started_at >= ?)`, fmtTime(since), fmtTime(since)).Scan(&v)
	return v, err
}

// RunSpent is the runs' share of Spent (a session's ledger adds the other
// sessions' share itself, without its own).
func (s *Store) RunSpent(since time.Time) (float64, error) {
	var v float64
	err := s.db.QueryRow("SELECT coalesce(sum(cost_usd), 0) FROM run_list WHERE started_at >= ?", fmtTime(since)).Scan(&v)
	return v, err
}

// Exchange returns the recorded model exchange of a run ("" when none).
func (s *Store) Exchange(ctx context.Context, runID string) (json.RawMessage, error) {
	var ex string
	err := s.db.QueryRowContext(ctx, "SELECT exchange FROM runs WHERE id = ?", runID).Scan(&ex)
	if err == sql.ErrNoRows {
		return nil, fmt.Errorf("run %s: %w", runID, findings.ErrNotFound)
	}
	return json.RawMessage(ex), err
}
