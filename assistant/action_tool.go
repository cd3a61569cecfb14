package assistant

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/patrold/patrold/agent"
)

// actionTimeoutMargin lets the executor's own timeout fire (with a useful
// result) before the agent runtime abandons the handler.
const actionTimeoutMargin = 5 * time.Second

// MaxReasonBytes bounds run_action's model-written reason argument.
const MaxReasonBytes = 512

// actionTool declares run_action: one write tool whose `action` argument
// picks a declared action. Every case is an infrastructure write. A
// missing or unknown action is a write too (fail closed) and is refused
// by the schema before anything runs. Without declared actions there is
// no run_action tool. The env is its Authority. The registry's pre-check
// asks it, in order:
// - whether the target was resolved;
// - whether its kind and the finding's signal are declared;
// - what autonomy and risk allow;
// - whether an operator approved;
// - whether the condition is still present live.
func (e *env) actionTool() (agent.Tool, bool) {
	if len(e.a.actions) == 0 {
		return agent.Tool{}, false
	}
	cases := make(map[string]agent.ToolKind, len(e.a.actions))
	names := make([]string, 0, len(e.a.actions))
	desc := "Run one declared remediation action on the finding's resource. Actions:"
	for _, a := range e.a.actions {
		cases[a.Name] = agent.KindWrite
		names = append(names, a.Name)
		desc += fmt.Sprintf(" %s (risk %s): %s;", a.Name, a.Risk, a.Description)
	}
	enum, _ := json.Marshal(names)
	schema := fmt.Sprintf(`{"type":"object","properties":{"action":{"type":"string","enum":%s},"reason":{"type":"string","maxLength":%d,"description":"why this action fixes the finding"}},"required":["action"],"additionalProperties":false}`,
		enum, MaxReasonBytes)
	return agent.Tool{
		Name: ToolRunAction, Description: desc, Schema: json.RawMessage(schema),
		Discriminator: "action", Cases: cases, Target: agent.TargetInfrastructure, Authority: e,
		Timeout: e.a.opts.ActionTimeout + actionTimeoutMargin, Handler: e.runAction,
	}, true
}

var _ agent.Authority = (*env)(nil)

type actionArgs struct {
	Action string `json:"action"`
	Reason string `json:"reason,omitempty"`
}

func decodeActionArgs(args json.RawMessage) actionArgs {
	var in actionArgs
	_ = json.Unmarshal(args, &in)
	return in
}

// declared returns the action a call names; the schema's enum has already
// refused any other name, so a miss here is a registry bug (fail closed).
func (e *env) declared(args json.RawMessage) (Action, error) {
	in := decodeActionArgs(args)
	act, ok := e.a.action(in.Action)
	if !ok {
		return Action{}, agent.NewToolError(agent.CodePolicyBlocked, "no declared action named %q", in.Action).With("action", in.Action)
	}
	return act, nil
}

// TargetResolved: resolve_target has confirmed the finding's resource live
// in this session.
func (e *env) TargetResolved(json.RawMessage) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.resolved == nil {
		return agent.NewToolError(agent.CodeTargetUnresolved, "the finding's resource has not been resolved in this session: call %s first", ToolResolveTarget)
	}
	return nil
}

// TargetKind: the resolved resource's live kind is one the action declares.
func (e *env) TargetKind(args json.RawMessage) error {
	act, err := e.declared(args)
	if err != nil {
		return err
	}
	e.mu.Lock()
	kind := e.resolved.Kind
	e.mu.Unlock()
	if !act.AllowsKind(kind) {
		return agent.NewToolError(agent.CodePolicyBlocked, "action %s is not declared for resources of kind %s", act.Name, kind).
			With("action", act.Name).With("kind", string(kind)).With("kinds", act.Kinds)
	}
	// The target must also fit the action's argv: no value an option.
	//mutate:action-argv-precheck ./cmd/patrold ^TestActionArgvOptionRefused$
	if _, err := Argv(act.Command, e.vars()); err != nil {
		return agent.NewToolError(agent.CodePolicyBlocked, "action %s is not run on this finding: %v", act.Name, err).With("action", act.Name)
	}
	return nil
}

// Signal: the finding's signal is one the action declares (or it declares ["*"]).
func (e *env) Signal(args json.RawMessage) error {
	act, err := e.declared(args)
	if err != nil {
		return err
	}
	if !act.AppliesTo(e.finding.Key) {
		return agent.NewToolError(agent.CodePolicyBlocked, "action %s is not declared for signal %s", act.Name, safeName(e.finding.Key)).
			With("action", act.Name).With("signals", act.Signals)
	}
	return nil
}

// AutonomyRisk: docs/ASSISTANT.md#autonomy (risk never, monitor: never runs).
func (e *env) AutonomyRisk(args json.RawMessage) error {
	act, err := e.declared(args)
	if err != nil {
		return err
	}
	if Decide(e.autonomy, act.Risk) == DecisionBlocked {
		return agent.NewToolError(agent.CodePolicyBlocked, "action %s (risk %s) may not run at autonomy %s", act.Name, act.Risk, e.autonomy).
			With("action", act.Name).With("risk", string(act.Risk)).With("autonomy", string(e.autonomy))
	}
	return nil
}

// Approval: a write the policy sends to an operator is recorded as the
// session's pending request, unless the operator's grant for this very
// action is held (a resumed session).
func (e *env) Approval(args json.RawMessage) error {
	act, err := e.declared(args)
	if err != nil {
		return err
	}
	if Decide(e.autonomy, act.Risk) != DecisionApproval || e.holdsGrant(act.Name) {
		return nil
	}
	// What is stored and shown to the approver is patrold's own rendering:
	// the action, and the model's reason through fileText (normalised,
	// every claim no tool result supports stripped, capped).
	reason, _ := e.fileText(decodeActionArgs(args).Reason, maxReasonRunes)
	stored, _ := json.Marshal(actionArgs{Action: act.Name, Reason: reason.String()})
	e.mu.Lock()
	e.request = &writeRequest{Action: act, Args: stored, Reason: reason}
	e.mu.Unlock()
	return agent.NewToolError(agent.CodeApprovalRequired, "action %s (risk %s) waits for an operator approval", act.Name, act.Risk).
		With("action", act.Name).With("risk", string(act.Risk))
}

// ConditionPresent re-collects live state and runs the finding's detector:
// a write is admitted only while the condition is present (never on a
// cleared or unknown condition, model driver and playbook alike).
func (e *env) ConditionPresent(ctx context.Context, _ json.RawMessage) error {
	snap, err := e.collect(ctx)
	if err != nil {
		return err
	}
	res := CheckCondition(snap, e.a.opts.Thresholds(), &e.finding)
	if res.Condition != ConditionPresent {
		msg := fmt.Sprintf("a live check finds the condition %s, not present: nothing to fix", res.Condition)
		if res.Reason != "" {
			msg += " (" + res.Reason + ")"
		}
		return agent.NewToolError(agent.CodePolicyBlocked, "%s", msg).With("condition", string(res.Condition))
	}
	return nil
}

// EpisodeKey: each declared action runs at most once per session.
func (e *env) EpisodeKey(args json.RawMessage) string { return decodeActionArgs(args).Action }

// runAction executes an action the pre-check admitted. It decides nothing:
// every refusal is the registry's. An executed action, successful or not,
// moves the state machine to VERIFYING.
func (e *env) runAction(ctx context.Context, args json.RawMessage) (any, error) {
	act, err := e.declared(args)
	if err != nil {
		return nil, err
	}
	e.takeGrant(act.Name)
	res, err := e.a.exec.run(ctx, act, e.vars())
	e.mu.Lock()
	e.executed++
	e.lastExec = &res
	e.afterWrite = ""
	e.mu.Unlock()
	e.a.metrics.action(res)
	if err != nil {
		return nil, err
	}
	if !res.OK() {
		te := agent.NewToolError(agent.CodeExecutionFailed, "action %s failed: %s", act.Name, res.Error)
		te.Details = map[string]any{"exit_code": res.ExitCode, "output": res.Output, "timed_out": res.TimedOut, "truncated": res.Truncated}
		return nil, te
	}
	return res, nil
}

// holdsGrant reports whether an operator's approval for the named action
// is held and not yet used.
func (e *env) holdsGrant(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.grant != "" && e.grant == name
}

// takeGrant consumes an operator's approval for the named action.
func (e *env) takeGrant(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.grant == name {
		e.grant = ""
	}
}
