package assistant

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
)

// ApprovalState is where an approval is in its lifecycle.
type ApprovalState string

// Approval states: pending until an operator approves or denies it, or
// until its expires_at passes.
const (
	ApprovalPending  ApprovalState = "pending"
	ApprovalApproved ApprovalState = "approved"
	ApprovalDenied   ApprovalState = "denied"
	ApprovalExpired  ApprovalState = "expired"
)

// Approval is one write waiting for (or decided by) an operator.
type Approval struct {
	ID         string          `json:"id"`
	FindingID  string          `json:"finding_id"`
	SessionID  string          `json:"session_id"`
	Attempt    int             `json:"attempt"`
	ResourceID string          `json:"resource_id"`
	Action     string          `json:"action"`
	Args       json.RawMessage `json:"args"`
	Risk       Risk            `json:"risk"`
	// Reason is the model's reason for the write, neutralised and capped
	// (what the approver is shown).
	Reason    string        `json:"reason,omitempty"`
	State     ApprovalState `json:"state"`
	CreatedAt time.Time     `json:"created_at"`
	ExpiresAt time.Time     `json:"expires_at"`
	DecidedAt *time.Time    `json:"decided_at,omitempty"`
	DecidedBy string        `json:"decided_by,omitempty"`
}

// parked is an approval with the session state it resumes.
type parked struct {
	Approval
	state sessionState
	fsm   agent.FSMSnapshot
}

const approvalColumns = `id, finding_id, session_id, attempt, resource_id, action, args, risk, state, created_at, expires_at,
	decided_at, decided_by, driver, autonomy, started_at, turns, fsm, transcript, messages, reason`

// park persists the approval a session waits for, with the session's
// state machine snapshot, transcript and conversation.
func (a *Assistant) park(ctx context.Context, s *session, now time.Time) (Approval, error) {
	s.env.mu.Lock()
	req := *s.env.request
	s.env.mu.Unlock()
	ap := Approval{
		ID: findings.NewID(now), FindingID: s.state.FindingID, SessionID: s.state.ID, Attempt: s.state.Attempt,
		ResourceID: s.env.finding.ResourceID, Action: req.Action.Name, Args: req.Args, Risk: req.Action.Risk, Reason: req.Reason,
		State: ApprovalPending, CreatedAt: now, ExpiresAt: now.Add(a.opts.Config.ApprovalTTL),
	}
	fsm, err := json.Marshal(s.agent.FSM().Snapshot())
	if err != nil {
		return ap, fmt.Errorf("assistant: encode fsm: %w", err)
	}
	tj, _ := json.Marshal(s.state.Transcript)
	msgs, _ := json.Marshal(s.state.Messages)
	_, err = a.opts.Store.DB().ExecContext(ctx, `INSERT INTO approvals (`+approvalColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,NULL,'',?,?,?,?,?,?,?,?)`,
		ap.ID, ap.FindingID, ap.SessionID, ap.Attempt, ap.ResourceID, ap.Action, string(ap.Args), string(ap.Risk), string(ap.State),
		fmtTime(ap.CreatedAt), fmtTime(ap.ExpiresAt), string(s.state.Driver), string(s.state.Autonomy), fmtTime(s.state.StartedAt),
		s.state.Turns, string(fsm), string(tj), string(msgs), ap.Reason)
	if err != nil {
		return ap, fmt.Errorf("assistant: store approval: %w", err)
	}
	return ap, nil
}

type rowScanner interface{ Scan(dest ...any) error }

func scanParked(sc rowScanner) (*parked, error) {
	var p parked
	var args, risk, state, created, expires, driver, autonomy, started, fsm, tj, msgs string
	var decided sql.NullString
	err := sc.Scan(&p.ID, &p.FindingID, &p.SessionID, &p.Attempt, &p.ResourceID, &p.Action, &args, &risk, &state, &created, &expires,
		&decided, &p.DecidedBy, &driver, &autonomy, &started, &p.state.Turns, &fsm, &tj, &msgs, &p.Reason)
	if err != nil {
		return nil, err
	}
	p.Args, p.Risk, p.State = json.RawMessage(args), Risk(risk), ApprovalState(state)
	p.CreatedAt, p.ExpiresAt = parseTime(created), parseTime(expires)
	if decided.Valid {
		t := parseTime(decided.String)
		p.DecidedAt = &t
	}
	p.state.ID, p.state.FindingID, p.state.Attempt = p.SessionID, p.FindingID, p.Attempt
	p.state.Driver, p.state.Autonomy, p.state.StartedAt = contracts.Driver(driver), findings.Autonomy(autonomy), parseTime(started)
	if err := json.Unmarshal([]byte(fsm), &p.fsm); err != nil {
		return nil, fmt.Errorf("approval %s: fsm: %w", p.ID, err)
	}
	if err := json.Unmarshal([]byte(tj), &p.state.Transcript); err != nil {
		return nil, fmt.Errorf("approval %s: transcript: %w", p.ID, err)
	}
	if err := json.Unmarshal([]byte(msgs), &p.state.Messages); err != nil {
		return nil, fmt.Errorf("approval %s: messages: %w", p.ID, err)
	}
	return &p, nil
}

// load returns one approval with its session state.
func (a *Assistant) load(ctx context.Context, id string) (*parked, error) {
	row := a.opts.Store.DB().QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE id = ?`, id)
	p, err := scanParked(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("approval %q: %w", id, ErrApprovalNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("assistant: load approval %s: %w", id, err)
	}
	return p, nil
}

// Pending lists the approvals still waiting at now, oldest first.
func (a *Assistant) Pending(ctx context.Context, now time.Time) ([]Approval, error) {
	return a.queryApprovals(ctx, `WHERE state = 'pending' AND expires_at > ? ORDER BY created_at, id`, fmtTime(now))
}

// PendingPage returns one page of the pending approvals, oldest first,
// and the cursor of the next page.
func (a *Assistant) PendingPage(ctx context.Context, now time.Time, page findings.Page) ([]Approval, string, error) {
	limit, key, err := page.Resolve("approvals", 2)
	if err != nil {
		return nil, "", err
	}
	where, args := `WHERE state = 'pending' AND expires_at > ?`, []any{fmtTime(now)}
	if key != nil {
		where += ` AND (created_at, id) > (?, ?)`
		args = append(args, key[0], key[1])
	}
	out, err := a.queryApprovals(ctx, where+` ORDER BY created_at, id LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = findings.NextCursor("approvals", fmtTime(out[limit-1].CreatedAt), out[limit-1].ID)
	}
	return out, next, nil
}

// Approvals lists every approval of a finding, oldest first.
func (a *Assistant) Approvals(ctx context.Context, findingID string) ([]Approval, error) {
	return a.queryApprovals(ctx, `WHERE finding_id = ? ORDER BY created_at, id`, findingID)
}

func (a *Assistant) queryApprovals(ctx context.Context, where string, args ...any) ([]Approval, error) {
	rows, err := a.opts.Store.DB().QueryContext(ctx, `SELECT `+approvalColumns+` FROM approvals `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("assistant: list approvals: %w", err)
	}
	defer rows.Close()
	out := []Approval{}
	for rows.Next() {
		p, err := scanParked(rows)
		if err != nil {
			return nil, fmt.Errorf("assistant: list approvals: %w", err)
		}
		out = append(out, p.Approval)
	}
	return out, rows.Err()
}

// transition moves a pending approval to state, only if it is still
// pending (and, for approve/deny, not past its expiry). It reports
// whether this call made the change.
func (a *Assistant) transition(ctx context.Context, id string, to ApprovalState, actor string, now time.Time) (bool, error) {
	q := `UPDATE approvals SET state = ?, decided_at = ?, decided_by = ? WHERE id = ? AND state = 'pending'`
	args := []any{string(to), fmtTime(now), actor, id}
	if to != ApprovalExpired {
		q += ` AND expires_at > ?`
		args = append(args, fmtTime(now))
	}
	res, err := a.opts.Store.DB().ExecContext(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("assistant: decide approval %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
