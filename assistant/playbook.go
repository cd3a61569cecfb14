package assistant

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/patrold/patrold/agent"
)

// drivePlaybook is the no-model driver: resolve_target, check_condition,
// the first declared action whose signals name the finding's key, then
// check_condition again. It goes through the same registry, pipeline and
// state machine as a model. It never acts on a condition it cannot see:
// a cleared or unknown condition ends the session before any write.
func (s *session) drivePlaybook(ctx context.Context) {
	if b := s.batch(ctx, toolCall("pb_resolve", ToolResolveTarget, struct{}{})); !stepOK(b) {
		s.reason = "target not resolved: " + failure(b)
		return
	}
	cond, ok := s.checkCondition(ctx, "pb_check")
	switch {
	case !ok:
		return
	case cond.Condition == ConditionCleared:
		s.reason = "condition already cleared; nothing to do"
		return
	case cond.Condition == ConditionUnknown:
		s.reason = "condition unknown (" + cond.Reason + "); not acting without seeing it"
		return
	}
	act, found := s.playbookAction()
	if !found {
		s.reason = fmt.Sprintf("no declared action names signal %s", s.env.finding.Key)
		return
	}
	b := s.batch(ctx, toolCall("pb_action", ToolRunAction, map[string]string{"action": act.Name}))
	s.afterAction(ctx, b, act.Name)
}

// afterAction reads back an executed action (playbook and approved
// actions alike) and finishes; a refused action ends the session.
func (s *session) afterAction(ctx context.Context, b agent.Batch, name string) {
	step := b.Results[0].Step
	switch step.Status {
	case agent.StatusApprovalRequired:
		s.reason = fmt.Sprintf("action %s waits for an operator approval", name)
		return
	case agent.StatusBlocked, agent.StatusSkipped:
		s.reason = fmt.Sprintf("action %s refused: %s", name, failure(b))
		return
	}
	ran := "succeeded"
	if step.Status != agent.StatusOK {
		ran = "failed (" + failure(b) + ")"
	}
	if _, ok := s.checkCondition(ctx, "pb_verify"); !ok {
		s.reason = fmt.Sprintf("action %s %s; verification failed: %s", name, ran, s.reason)
		return
	}
	s.finalise()
	s.reason = ""
	s.playbookDone = true
}

// checkCondition runs check_condition as one batch and decodes its result.
func (s *session) checkCondition(ctx context.Context, id string) (ConditionResult, bool) {
	b := s.batch(ctx, toolCall(id, ToolCheckCondition, struct{}{}))
	var env struct {
		Result ConditionResult `json:"result"`
	}
	if !stepOK(b) || json.Unmarshal([]byte(b.Results[0].Content), &env) != nil {
		s.reason = "check_condition failed: " + failure(b)
		return ConditionResult{}, false
	}
	return env.Result, true
}

// playbookAction is the first declared action naming the finding's key.
func (s *session) playbookAction() (Action, bool) {
	for _, a := range s.a.actions {
		if a.Declares(s.env.finding.Key) {
			return a, true
		}
	}
	return Action{}, false
}

func stepOK(b agent.Batch) bool {
	return len(b.Results) == 1 && b.Results[0].Step.Status == agent.StatusOK
}

// failure renders the code and message of a failed single-call batch.
func failure(b agent.Batch) string {
	if len(b.Results) == 0 {
		return "no result"
	}
	var env struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(b.Results[0].Content), &env) != nil || env.Error == nil {
		return string(b.Results[0].Step.Status)
	}
	return env.Error.Code + ": " + env.Error.Message
}
