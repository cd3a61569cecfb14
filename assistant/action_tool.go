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

// actionTool declares run_action: one write tool whose `action` argument
// picks a declared action. Every case is an infrastructure write; a
// missing or unknown action is a write too (fail closed) and is refused by
// the schema before anything runs. Without declared actions there is no
// run_action tool.
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
	schema := `{"type":"object","properties":{"action":{"type":"string","enum":` + string(enum) +
		`},"reason":{"type":"string","description":"why this action fixes the finding"}},"required":["action"],"additionalProperties":false}`
	return agent.Tool{
		Name: ToolRunAction, Description: desc, Schema: json.RawMessage(schema),
		Discriminator: "action", Cases: cases, Target: agent.TargetInfrastructure,
		Timeout: e.a.opts.ActionTimeout + actionTimeoutMargin, Handler: e.runAction,
	}, true
}

// runAction applies the policy, then executes. Refusals (POLICY_BLOCKED,
// APPROVAL_REQUIRED) never run anything, so the state machine undoes its
// WRITING; an executed action, successful or not, moves it to VERIFYING.
func (e *env) runAction(ctx context.Context, args json.RawMessage) (any, error) {
	var in struct {
		Action string `json:"action"`
	}
	_ = json.Unmarshal(args, &in)
	act, ok := e.a.action(in.Action)
	if !ok {
		return nil, agent.NewToolError(agent.CodePolicyBlocked, "no declared action named %q", in.Action).With("action", in.Action)
	}
	if !act.AppliesTo(e.finding.Key) {
		return nil, agent.NewToolError(agent.CodePolicyBlocked, "action %s is not declared for signal %s", act.Name, e.finding.Key).
			With("action", act.Name).With("signals", act.Signals)
	}
	switch Decide(e.autonomy, act.Risk) {
	case DecisionBlocked:
		return nil, agent.NewToolError(agent.CodePolicyBlocked, "action %s (risk %s) may not run at autonomy %s", act.Name, act.Risk, e.autonomy).
			With("action", act.Name).With("risk", string(act.Risk)).With("autonomy", string(e.autonomy))
	case DecisionApproval:
		if !e.takeGrant(act.Name) {
			e.mu.Lock()
			e.request = &writeRequest{Action: act, Args: append(json.RawMessage(nil), args...)}
			e.mu.Unlock()
			return nil, agent.NewToolError(agent.CodeApprovalRequired, "action %s (risk %s) waits for an operator approval", act.Name, act.Risk).
				With("action", act.Name).With("risk", string(act.Risk))
		}
	}
	res, err := e.a.exec.run(ctx, act, Vars{ResourceID: e.finding.ResourceID, FindingID: e.finding.ID, Key: e.finding.Key, SessionID: e.sessionID})
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

// takeGrant consumes an operator's approval for the named action.
func (e *env) takeGrant(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.grant != "" && e.grant == name {
		e.grant = ""
		return true
	}
	return false
}
