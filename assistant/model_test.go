package assistant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/script"
)

// call and say build scripted model turns.
func call(name, args string) script.Turn {
	return script.Turn{ToolCalls: []model.ToolCall{{ID: fmt.Sprintf("m_%s_%d", name, len(args)), Name: name, Arguments: json.RawMessage(args)}}}
}

func say(text string) script.Turn { return script.Turn{Text: text} }

func scripted(t *testing.T, turns ...script.Turn) *script.Provider {
	t.Helper()
	p, err := script.New(&script.Script{Turns: turns})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestModelMustReadBeforeFinishing(t *testing.T) {
	fx := newFixture(t)
	o := fx.options(findings.AutonomyFull, fx.fixAction("low"))
	o.Provider = scripted(t,
		call(ToolResolveTarget, `{}`),
		call(ToolRunAction, `{"action":"prune_snapshots","reason":"usage 96%"}`),
		say("Fixed it."), // refused: nothing read the write back
		call(ToolCheckCondition, `{}`),
		say("Pruned snapshots; check_condition says cleared."),
	)
	res := fx.run(fx.assistant(o))
	tr := res.Transcript
	if tr.Outcome != contracts.OutcomeFixVerified || tr.Driver != contracts.DriverModel || tr.FinalAnswerBlocked != 1 ||
		tr.FinalAnswer.String() != "Pruned snapshots; check_condition says cleared." || tr.FinalState != agent.StateReading {
		t.Fatalf("transcript %s", mustJSON(t, tr))
	}
	equal(t, "states", tr.States(), []agent.State{agent.StateResolving, agent.StateReading, agent.StateWriting, agent.StateVerifying, agent.StateReading})
}

func TestModelTurnLimitEndsUnverified(t *testing.T) {
	fx := newFixture(t)
	o := fx.options(findings.AutonomyFull, fx.fixAction("low"))
	o.Config.MaxTurns = 5
	o.Provider = scripted(t,
		call(ToolResolveTarget, `{}`),
		call(ToolRunAction, `{"action":"prune_snapshots"}`),
		say("Done."), say("Done, really."), say("Trust me."),
	)
	res := fx.run(fx.assistant(o))
	tr := res.Transcript
	// The fault did clear (the action worked), but nobody read it back: the
	// session never claims the fix.
	if tr.Outcome != contracts.OutcomeFixVerificationUnknown || !tr.FinalAnswer.Empty() || tr.FinalAnswerBlocked != 3 || tr.FinalState != agent.StateVerifying {
		t.Fatalf("transcript %s", mustJSON(t, tr))
	}
}

func TestModelReadWithoutCheckConditionIsNotVerified(t *testing.T) {
	fx := newFixture(t)
	o := fx.options(findings.AutonomyFull, fx.fixAction("low"))
	o.Provider = scripted(t,
		call(ToolResolveTarget, `{}`),
		call(ToolRunAction, `{"action":"prune_snapshots"}`),
		call(ToolGetResource, `{}`),
		say("Usage looks fine now."),
	)
	res := fx.run(fx.assistant(o))
	if res.Transcript.Outcome != contracts.OutcomeFixVerificationUnknown {
		t.Fatalf("outcome %s", res.Transcript.Outcome)
	}
}

func TestUnknownActionIsRefused(t *testing.T) {
	fx := newFixture(t)
	o := fx.options(findings.AutonomyFull, fx.fixAction("low"))
	o.Provider = scripted(t,
		call(ToolResolveTarget, `{}`),
		call(ToolRunAction, `{"action":"rm_rf_everything"}`),
		call(ToolRunAction, `{}`),
		say("I could not fix it."),
	)
	a := fx.assistant(o)
	res := fx.run(a)
	equal(t, "steps", stepLines(res.Transcript.Steps), []string{
		"1:resolve_target:ok::RESOLVING>READING",
		"2:run_action:blocked:INVALID_INPUT:READING>READING",
		// An all-refused turn makes the next one text-only (agent rule).
		"3:run_action:blocked:TOOL_NOT_ADVERTISED:READING>READING",
	})
	if res.Transcript.Outcome != contracts.OutcomeCannotFix || fx.fixLog() != "" {
		t.Fatalf("outcome %s, action log %q", res.Transcript.Outcome, fx.fixLog())
	}

	// Classification fails closed, and the handler refuses on its own too.
	s, err := a.newSession(sessionState{ID: "s", FindingID: fx.finding.ID, Attempt: 1, Autonomy: findings.AutonomyFull}, fx.finding, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := agent.NewRegistry(s.env.tools()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{`{"action":"rm_rf_everything"}`, `{}`, `not json`} {
		if k := reg.ClassifyToolCall(ToolRunAction, json.RawMessage(args)); k != agent.KindWrite {
			t.Fatalf("run_action %s classified %s", args, k)
		}
	}
	_, err = s.env.runAction(context.Background(), json.RawMessage(`{"action":"rm_rf_everything"}`))
	var te *agent.ToolError
	if !errors.As(err, &te) || te.Code != agent.CodePolicyBlocked {
		t.Fatalf("handler: %v", err)
	}
}

func TestActionRestrictedToSignals(t *testing.T) {
	fx := newFixture(t)
	cpuOnly := ActionSpec{Name: "restart", Command: []string{"/bin/true"}, Kinds: []string{"storage"}, Risk: "low", Signals: []string{"cpu-high"}}
	o := fx.options(findings.AutonomyFull, cpuOnly)
	o.Provider = scripted(t, call(ToolResolveTarget, `{}`), call(ToolRunAction, `{"action":"restart"}`), say("no"))
	res := fx.run(fx.assistant(o))
	if got := res.Transcript.Steps[1]; got.Code != agent.CodePolicyBlocked || got.StateAfter != agent.StateReading {
		t.Fatalf("step %+v", got)
	}
}
