package assistant

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/patrold/patrold/findings"
)

// ReasonByModel labels an approval's reason as the model's own words: an
// approver is shown what will run from the declaration, and the reason
// only as what the model said.
const ReasonByModel = "model"

// ApprovalView is a pending approval as an approver is shown it (CLI and
// API): what will run, taken from the action's declaration, the target,
// the live condition, and the model's reason labelled as the model's.
type ApprovalView struct {
	Approval
	// ReasonBy says whose words Reason is: always the model's.
	ReasonBy string `json:"reason_by"`
	// Declared is the action as the configuration declares it.
	Declared DeclaredAction `json:"declared"`
	// Target is the resource the action runs on.
	Target ApprovalTarget `json:"target"`
	// Condition is the finding the session works on, as the store holds
	// it now; absent when the finding is gone.
	Condition *ApprovalCondition `json:"condition,omitempty"`
}

// DeclaredAction is what the configuration declares of an action.
type DeclaredAction struct {
	Description string   `json:"description"`
	Command     []string `json:"command"`
	Risk        Risk     `json:"risk"`
	// Missing: the action is no longer declared (the approval cannot run).
	Missing bool `json:"missing,omitempty"`
}

// ApprovalTarget is the resource an approved action runs on.
type ApprovalTarget struct {
	Kind string `json:"kind,omitempty"`
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// ApprovalCondition is the live finding behind an approval.
type ApprovalCondition struct {
	Key      string            `json:"key"`
	Severity findings.Severity `json:"severity"`
	Status   findings.Status   `json:"status"`
	Source   findings.Source   `json:"source"`
	Title    string            `json:"title"`
	Evidence string            `json:"evidence,omitempty"`
}

// Describe returns the approvals as an approver is shown them.
func (a *Assistant) Describe(ctx context.Context, list []Approval) ([]ApprovalView, error) {
	out := make([]ApprovalView, 0, len(list))
	for _, ap := range list {
		v := ApprovalView{Approval: ap, ReasonBy: ReasonByModel, Target: ApprovalTarget{ID: safeName(ap.ResourceID)}}
		if kind, _, ok := strings.Cut(ap.ResourceID, "/"); ok {
			v.Target.Kind = safeName(kind) // the id's kind prefix, until the finding says
		}
		if act, ok := a.action(ap.Action); ok {
			v.Declared = DeclaredAction{Description: act.Description, Command: slices.Clone(act.Command), Risk: act.Risk}
		} else {
			v.Declared = DeclaredAction{Risk: ap.Risk, Missing: true}
		}
		f, err := a.opts.Store.Get(ctx, ap.FindingID)
		switch {
		case err == nil:
			if f.ResourceKind != "" {
				v.Target.Kind = f.ResourceKind
			}
			v.Target.Name = safeName(f.ResourceName)
			v.Condition = &ApprovalCondition{Key: f.Key, Severity: f.Severity, Status: f.Status, Source: f.Source, Title: f.Title, Evidence: f.Evidence}
		case !errors.Is(err, findings.ErrNotFound):
			return nil, fmt.Errorf("assistant: approval %s: finding: %w", ap.ID, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// PendingViews is one page of PendingPage as an approver is shown it.
func (a *Assistant) PendingViews(ctx context.Context, page findings.Page) ([]ApprovalView, string, error) {
	list, next, err := a.PendingPage(ctx, a.nowUTC(), page)
	if err != nil {
		return nil, "", err
	}
	views, err := a.Describe(ctx, list)
	return views, next, err
}
