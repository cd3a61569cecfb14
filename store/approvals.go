package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store/records"
)

// Approval states the store filters on.
const (
	approvalPending = "pending"
	approvalExpired = "expired"
)

const approvalColumns = `id, finding_id, session_id, attempt, resource_id, action, args, risk, state, created_at, expires_at,
	decided_at, decided_by, driver, autonomy, started_at, turns, fsm, transcript, messages, reason`

// InsertApproval stores a new approval, undecided.
func (s *Store) InsertApproval(ctx context.Context, ap records.ApprovalRecord) error {
	_, err := s.exec(ctx, `INSERT INTO approvals (`+approvalColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,NULL,'',?,?,?,?,?,?,?,?)`,
		ap.ID, ap.FindingID, ap.SessionID, ap.Attempt, ap.ResourceID, ap.Action, string(ap.Args), ap.Risk, ap.State,
		fmtTime(ap.CreatedAt), fmtTime(ap.ExpiresAt), ap.Driver, ap.Autonomy, fmtTime(ap.StartedAt),
		ap.Turns, string(ap.FSM), string(ap.Transcript), string(ap.Messages), ap.Reason.String())
	if err != nil {
		return fmt.Errorf("store approval: %w", err)
	}
	return nil
}

func scanApproval(sc scanner) (records.ApprovalRecord, error) {
	var ap records.ApprovalRecord
	var args, created, expires, started, fsm, tj, msgs string
	var decided sql.NullString
	err := sc.Scan(&ap.ID, &ap.FindingID, &ap.SessionID, &ap.Attempt, &ap.ResourceID, &ap.Action, &args, &ap.Risk, &ap.State, &created, &expires,
		&decided, &ap.DecidedBy, &ap.Driver, &ap.Autonomy, &started, &ap.Turns, &fsm, &tj, &msgs, &ap.Reason)
	if err != nil {
		return ap, err
	}
	ap.Args, ap.FSM, ap.Transcript, ap.Messages = json.RawMessage(args), json.RawMessage(fsm), json.RawMessage(tj), json.RawMessage(msgs)
	ap.CreatedAt, ap.ExpiresAt, ap.StartedAt, ap.DecidedAt = parseTime(created), parseTime(expires), parseTime(started), parseTimePtr(decided)
	return ap, nil
}

// Approval returns one approval (findings.ErrNotFound when none has id).
func (s *Store) Approval(ctx context.Context, id string) (records.ApprovalRecord, error) {
	ap, err := scanApproval(s.db.QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return ap, fmt.Errorf("approval %q: %w", id, findings.ErrNotFound)
	}
	if err != nil {
		return ap, fmt.Errorf("load approval %s: %w", id, err)
	}
	return ap, nil
}

// PendingApprovals returns the approvals still waiting at now, oldest
// first: after the sort key (created_at, id) when given, at most limit
// (0: every one).
func (s *Store) PendingApprovals(ctx context.Context, now time.Time, after []string, limit int) ([]records.ApprovalRecord, error) {
	where, args := `WHERE state = 'pending' AND expires_at > ?`, []any{fmtTime(now)}
	if len(after) == 2 {
		where += ` AND (created_at, id) > (?, ?)`
		args = append(args, after[0], after[1])
	}
	where += ` ORDER BY created_at, id`
	if limit > 0 {
		where += ` LIMIT ?`
		args = append(args, limit)
	}
	return s.queryApprovals(ctx, where, args...)
}

// DueApprovals lists the approvals still pending past their expiry at
// now, oldest first.
func (s *Store) DueApprovals(ctx context.Context, now time.Time) ([]records.ApprovalRecord, error) {
	return s.queryApprovals(ctx, `WHERE state = 'pending' AND expires_at <= ? ORDER BY created_at, id`, fmtTime(now))
}

// FindingApprovals lists every approval of a finding, oldest first.
func (s *Store) FindingApprovals(ctx context.Context, findingID string) ([]records.ApprovalRecord, error) {
	return s.queryApprovals(ctx, `WHERE finding_id = ? ORDER BY created_at, id`, findingID)
}

func (s *Store) queryApprovals(ctx context.Context, where string, args ...any) ([]records.ApprovalRecord, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+approvalColumns+` FROM approvals `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	defer rows.Close()
	out := []records.ApprovalRecord{}
	for rows.Next() {
		ap, err := scanApproval(rows)
		if err != nil {
			return nil, fmt.Errorf("list approvals: %w", err)
		}
		out = append(out, ap)
	}
	return out, rows.Err()
}

// DecideApproval moves a pending approval to state, only if it is still
// pending (and, unless the new state is "expired", not past its expiry).
// It reports whether this call made the change.
func (s *Store) DecideApproval(ctx context.Context, id, state, actor string, now time.Time) (bool, error) {
	q := `UPDATE approvals SET state = ?, decided_at = ?, decided_by = ? WHERE id = ? AND state = '` + approvalPending + `'`
	args := []any{state, fmtTime(now), actor, id}
	if state != approvalExpired {
		q += ` AND expires_at > ?`
		args = append(args, fmtTime(now))
	}
	res, err := s.exec(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("decide approval %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
