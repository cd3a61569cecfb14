package assistant

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model"
)

// DecisionResult is the answer to approve or deny: the approval as decided and
// how its session ended.
type DecisionResult struct {
	Approval Approval          `json:"approval"`
	Outcome  contracts.Outcome `json:"outcome"`
	Summary  string            `json:"summary,omitempty"`
	// Transcript is the session's transcript after the decision.
	Transcript *Transcript `json:"transcript,omitempty"`
}

// List returns the pending approvals as an approver is shown them
// (api.Approvals).
func (a *Assistant) List(ctx context.Context, page findings.Page) (any, string, error) {
	return a.PendingViews(ctx, page)
}

// Approve approves a pending write and resumes its session from the
// persisted state machine: the approved action runs, and the session must
// read it back before it may finish. It waits for the resumed session.
func (a *Assistant) Approve(ctx context.Context, id, actor string) (any, error) {
	p, err := a.decide(ctx, id, ApprovalApproved, actor)
	if err != nil {
		return nil, err
	}
	res, err := a.resume(ctx, p)
	if res == nil {
		return nil, err
	}
	return &DecisionResult{Approval: p.Approval, Outcome: res.Transcript.Outcome, Summary: res.Summary, Transcript: &res.Transcript}, err
}

// Deny denies a pending write; its session ends fix_rejected.
func (a *Assistant) Deny(ctx context.Context, id, actor string) (any, error) {
	p, err := a.decide(ctx, id, ApprovalDenied, actor)
	if err != nil {
		return nil, err
	}
	res, err := a.close(ctx, p, contracts.OutcomeFixRejected, fmt.Sprintf("action %s denied by %s", p.Action, actor))
	return &DecisionResult{Approval: p.Approval, Outcome: res.Transcript.Outcome, Summary: res.Summary, Transcript: &res.Transcript}, err
}

// ExpireApprovals expires every approval still pending past its
// expires_at at now. Each expired approval is published, and its session
// ends needs_attention (nobody decided; the next move is the operator's).
func (a *Assistant) ExpireApprovals(ctx context.Context, now time.Time) ([]Approval, error) {
	due, err := approvals(a.opts.Store.DueApprovals(ctx, now))
	if err != nil {
		return nil, err
	}
	var out []Approval
	var errs []error
	for _, ap := range due {
		p, err := a.load(ctx, ap.ID)
		if err == nil {
			err = a.expire(ctx, p, now)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, p.Approval)
	}
	return out, errors.Join(errs...)
}

// decide applies an operator's decision to a pending approval.
func (a *Assistant) decide(ctx context.Context, id string, to ApprovalState, actor string) (*parked, error) {
	if actor == "" {
		actor = "unknown"
	}
	now := a.nowUTC()
	ok, err := a.transition(ctx, id, to, actor, now)
	if err != nil {
		return nil, err
	}
	p, err := a.load(ctx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		switch {
		case p.State == ApprovalPending && !now.Before(p.ExpiresAt):
			if err := a.expire(ctx, p, now); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("approval %q expired at %s: %w", id, p.ExpiresAt.Format(time.RFC3339), ErrApprovalExpired)
		case p.State == ApprovalExpired:
			return nil, fmt.Errorf("approval %q: %w", id, ErrApprovalExpired)
		default:
			return nil, fmt.Errorf("approval %q is %s: %w", id, p.State, ErrApprovalDecided)
		}
	}
	event := contracts.ApprovalApproved
	if to == ApprovalDenied {
		event = contracts.ApprovalDenied
	}
	if err := a.publishApproval(ctx, event, p.Approval, now); err != nil {
		a.log.Warn("publish approval event", "approval", id, "event", event, "err", err)
	}
	return p, nil
}

// expire marks one approval expired (if it still is pending) and ends its
// session.
func (a *Assistant) expire(ctx context.Context, p *parked, now time.Time) error {
	ok, err := a.transition(ctx, p.ID, ApprovalExpired, "", now)
	if err != nil || !ok {
		return err
	}
	p.State, p.DecidedAt = ApprovalExpired, &now
	if err := a.publishApproval(ctx, contracts.ApprovalExpired, p.Approval, now); err != nil {
		a.log.Warn("publish approval event", "approval", p.ID, "event", contracts.ApprovalExpired, "err", err)
	}
	_, err = a.close(ctx, p, contracts.OutcomeNeedsAttention, fmt.Sprintf("approval for action %s expired undecided", p.Action))
	return err
}

// close ends a parked session without running anything more.
func (a *Assistant) close(ctx context.Context, p *parked, outcome contracts.Outcome, summary string) (*Result, error) {
	now := a.nowUTC()
	t := p.state.Transcript
	t.Outcome, t.FinalState = outcome, p.fsm.State
	res := &Result{Transcript: t, Attempt: p.Attempt, Summary: summary, StartedAt: p.state.StartedAt, FinishedAt: now}
	if err := a.saveSession(ctx, res); err != nil {
		return res, err
	}
	a.metrics.session(res)
	return res, a.emitOutcome(ctx, res)
}

// resume continues an approved session from its persisted FSM (restored,
// never a fresh one): it executes the approved call, then reads it back
// (the playbook with check_condition; a model continues its conversation
// and may only finish after a read).
func (a *Assistant) resume(ctx context.Context, p *parked) (*Result, error) {
	f, err := a.opts.Store.Get(ctx, p.FindingID)
	if err != nil {
		return nil, fmt.Errorf("assistant: resume approval %s: finding: %w", p.ID, err)
	}
	fsm, err := agent.RestoreFSM(p.fsm)
	if err != nil {
		return nil, fmt.Errorf("assistant: resume approval %s: %w", p.ID, err)
	}
	p.state.Autonomy = Effective(p.state.Autonomy, a.opts.Autonomy())
	s, err := a.newSession(p.state, f, fsm, p.Action)
	if err != nil {
		return nil, err
	}
	if err := a.startSession(ctx, s); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.opts.SessionTimeout)
	defer cancel()
	// The target is resolved live again before the approved call: its
	// pre-check (target, kind, signal, policy, live condition, once per
	// session) runs in full, only the approval is granted.
	resolve := toolCall("resume_resolve_"+p.ID, ToolResolveTarget, struct{}{})
	rb := s.batch(sctx, resolve)
	call := model.ToolCall{ID: "approved_" + p.ID, Name: ToolRunAction, Arguments: p.Args}
	b := s.batch(sctx, call)
	if s.state.Driver == contracts.DriverModel {
		msgs := append(s.state.Messages,
			model.Message{Role: model.RoleUser, Content: fmt.Sprintf("An operator approved action %s; patrold resolved the target again and ran it for you.", p.Action)},
			model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{resolve}},
			model.Message{Role: model.RoleTool, Content: rb.Results[0].Content, ToolCallID: resolve.ID, ToolName: resolve.Name},
			model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{call}},
			model.Message{Role: model.RoleTool, Content: b.Results[0].Content, ToolCallID: call.ID, ToolName: call.Name})
		s.driveModel(sctx, msgs)
	} else {
		s.afterAction(sctx, b, p.Action)
	}
	return a.finish(ctx, s, sctx.Err())
}
