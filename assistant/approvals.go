package assistant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/store/records"
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
	Reason    prompt.Text   `json:"reason,omitzero"`
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
	err = a.opts.Store.InsertApproval(ctx, records.ApprovalRecord{
		ID: ap.ID, FindingID: ap.FindingID, SessionID: ap.SessionID, Attempt: ap.Attempt, ResourceID: ap.ResourceID,
		Action: ap.Action, Args: ap.Args, Risk: string(ap.Risk), State: string(ap.State), CreatedAt: ap.CreatedAt, ExpiresAt: ap.ExpiresAt,
		Driver: string(s.state.Driver), Autonomy: string(s.state.Autonomy), StartedAt: s.state.StartedAt, Turns: s.state.Turns,
		FSM: fsm, Transcript: tj, Messages: msgs, Reason: ap.Reason,
	})
	if err != nil {
		return ap, fmt.Errorf("assistant: %w", err)
	}
	return ap, nil
}

// parkedFrom decodes a stored approval and the session state it resumes.
func parkedFrom(r records.ApprovalRecord) (*parked, error) {
	var p parked
	p.Approval = approvalFrom(r)
	p.state.Turns = r.Turns
	p.state.ID, p.state.FindingID, p.state.Attempt = p.SessionID, p.FindingID, p.Attempt
	p.state.Driver, p.state.Autonomy, p.state.StartedAt = contracts.Driver(r.Driver), findings.Autonomy(r.Autonomy), r.StartedAt
	if err := json.Unmarshal(r.FSM, &p.fsm); err != nil {
		return nil, fmt.Errorf("approval %s: fsm: %w", p.ID, err)
	}
	if err := json.Unmarshal(r.Transcript, &p.state.Transcript); err != nil {
		return nil, fmt.Errorf("approval %s: transcript: %w", p.ID, err)
	}
	if err := json.Unmarshal(r.Messages, &p.state.Messages); err != nil {
		return nil, fmt.Errorf("approval %s: messages: %w", p.ID, err)
	}
	return &p, nil
}

// approvalFrom is the approval a stored record describes.
func approvalFrom(r records.ApprovalRecord) Approval {
	return Approval{
		ID: r.ID, FindingID: r.FindingID, SessionID: r.SessionID, Attempt: r.Attempt, ResourceID: r.ResourceID,
		Action: r.Action, Args: r.Args, Risk: Risk(r.Risk), Reason: r.Reason, State: ApprovalState(r.State),
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, DecidedAt: r.DecidedAt, DecidedBy: r.DecidedBy,
	}
}

// load returns one approval with its session state.
func (a *Assistant) load(ctx context.Context, id string) (*parked, error) {
	r, err := a.opts.Store.Approval(ctx, id)
	if errors.Is(err, findings.ErrNotFound) {
		return nil, fmt.Errorf("approval %q: %w", id, ErrApprovalNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("assistant: %w", err)
	}
	p, err := parkedFrom(r)
	if err != nil {
		return nil, fmt.Errorf("assistant: load approval %s: %w", id, err)
	}
	return p, nil
}

// Pending lists the approvals still waiting at now, oldest first.
func (a *Assistant) Pending(ctx context.Context, now time.Time) ([]Approval, error) {
	return approvals(a.opts.Store.PendingApprovals(ctx, now, nil, 0))
}

// PendingPage returns one page of the pending approvals, oldest first,
// and the cursor of the next page.
func (a *Assistant) PendingPage(ctx context.Context, now time.Time, page findings.Page) ([]Approval, string, error) {
	limit, key, err := page.Resolve("approvals", 2)
	if err != nil {
		return nil, "", err
	}
	out, err := approvals(a.opts.Store.PendingApprovals(ctx, now, key, limit+1))
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
	return approvals(a.opts.Store.FindingApprovals(ctx, findingID))
}

func approvals(rs []records.ApprovalRecord, err error) ([]Approval, error) {
	if err != nil {
		return nil, fmt.Errorf("assistant: %w", err)
	}
	out := make([]Approval, 0, len(rs))
	for _, r := range rs {
		out = append(out, approvalFrom(r))
	}
	return out, nil
}

// transition moves a pending approval to state, only if it is still
// pending (and, for approve/deny, not past its expiry). It reports
// whether this call made the change.
func (a *Assistant) transition(ctx context.Context, id string, to ApprovalState, actor string, now time.Time) (bool, error) {
	ok, err := a.opts.Store.DecideApproval(ctx, id, string(to), actor, now)
	if err != nil {
		return false, fmt.Errorf("assistant: %w", err)
	}
	return ok, nil
}
