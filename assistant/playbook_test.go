package assistant

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
)

func TestPlaybookFixesAndVerifies(t *testing.T) {
	fx := newFixture(t)
	a := fx.assistant(fx.options(findings.AutonomyFull, fx.fixAction("high")))
	res := fx.run(a)
	tr := res.Transcript
	if tr.Outcome != contracts.OutcomeFixVerified || tr.Driver != contracts.DriverPlaybook || tr.FinalState != agent.StateReading {
		t.Fatalf("transcript %s", mustJSON(t, tr))
	}
	equal(t, "states", tr.States(), []agent.State{agent.StateResolving, agent.StateReading, agent.StateWriting, agent.StateVerifying, agent.StateReading})
	equal(t, "steps", stepLines(tr.Steps), []string{
		"1:resolve_target:ok::RESOLVING>READING",
		"2:check_condition:ok::READING>READING",
		"3:run_action:ok::READING>VERIFYING",
		"4:check_condition:ok::VERIFYING>VERIFYING",
	})
	// Placeholders were substituted in the arguments.
	if got := strings.TrimSpace(fx.fixLog()); got != testResource+" "+testKey+" "+fx.finding.ID {
		t.Fatalf("action arguments %q", got)
	}
	// Exactly one valid outcome was published, and recorded on the finding.
	outs := fx.pub.outcomes(t)
	if len(outs) != 1 || outs[0].Outcome != contracts.OutcomeFixVerified || outs[0].Attempt != 1 || outs[0].SessionID != tr.SessionID {
		t.Fatalf("outcomes %+v", outs)
	}
	f, err := fx.st.Get(context.Background(), fx.finding.ID)
	if err != nil || f.Status != findings.StatusResolved || f.LastOutcome != string(contracts.OutcomeFixVerified) {
		t.Fatalf("finding after fix: %+v %v", f, err)
	}
	// The transcript is stored and reads back identically.
	stored, err := a.Session(context.Background(), tr.SessionID)
	if err != nil || mustJSON(t, stored.Transcript) != mustJSON(t, tr) {
		t.Fatalf("stored transcript %v %v", stored, err)
	}
}

func TestPlaybookActionThatDoesNotHelp(t *testing.T) {
	fx := newFixture(t)
	noop := ActionSpec{Name: "noop", Command: []string{"/bin/true"}, Kinds: []string{"storage"}, Risk: "low", Signals: []string{testKey}}
	res := fx.run(fx.assistant(fx.options(findings.AutonomyFull, noop)))
	if res.Transcript.Outcome != contracts.OutcomeFixVerificationFailed {
		t.Fatalf("outcome %s (%s)", res.Transcript.Outcome, res.Summary)
	}
}

func TestPlaybookFailingActionStillVerifies(t *testing.T) {
	fx := newFixture(t)
	fail := ActionSpec{Name: "fail", Command: []string{"/bin/sh", "-c", "echo boom >&2; exit 3"}, Kinds: []string{"storage"}, Risk: "low", Signals: []string{testKey}}
	res := fx.run(fx.assistant(fx.options(findings.AutonomyFull, fail)))
	tr := res.Transcript
	if tr.Outcome != contracts.OutcomeFixFailed {
		t.Fatalf("outcome %s (%s)", tr.Outcome, res.Summary)
	}
	// The failed write still moved the FSM to VERIFYING and was read back.
	equal(t, "steps", stepLines(tr.Steps)[2:], []string{
		"3:run_action:error:EXECUTION_FAILED:READING>VERIFYING",
		"4:check_condition:ok::VERIFYING>VERIFYING",
	})
	if !strings.Contains(res.Summary, "exit status 3") {
		t.Fatalf("summary %q", res.Summary)
	}
}

func TestPlaybookWithoutMatchingActionCannotFix(t *testing.T) {
	fx := newFixture(t)
	other := ActionSpec{Name: "restart_vm", Command: []string{"/bin/true"}, Kinds: []string{"storage"}, Risk: "low", Signals: []string{"high_cpu"}}
	// An action without signals is usable by a model, not picked by the playbook.
	any := ActionSpec{Name: "anything", Command: []string{"/bin/true"}, Kinds: []string{"storage"}, Risk: "low", Signals: []string{"*"}}
	res := fx.run(fx.assistant(fx.options(findings.AutonomyFull, other, any)))
	if res.Transcript.Outcome != contracts.OutcomeCannotFix || len(res.Transcript.Steps) != 2 {
		t.Fatalf("transcript %s", mustJSON(t, res.Transcript))
	}
}

func TestPlaybookDoesNotActOnClearedCondition(t *testing.T) {
	fx := newFixture(t)
	fx.writeSnapshot(fx.snapPath, 10)
	res := fx.run(fx.assistant(fx.options(findings.AutonomyFull, fx.fixAction("low"))))
	if res.Transcript.Outcome != contracts.OutcomeCannotFix || fx.fixLog() != "" {
		t.Fatalf("outcome %s, action log %q", res.Transcript.Outcome, fx.fixLog())
	}
}

func TestPlaybookDoesNotActBlind(t *testing.T) {
	fx := newFixture(t)
	// An offline pool's metrics are stale: the detector cannot decide.
	doc, _ := os.ReadFile(fx.snapPath)
	_ = os.WriteFile(fx.snapPath, []byte(strings.Replace(string(doc), `"local-zfs","parent":"node/pve1","status":"online"`, `"local-zfs","parent":"node/pve1","status":"offline"`, 1)), 0o600)
	res := fx.run(fx.assistant(fx.options(findings.AutonomyFull, fx.fixAction("low"))))
	if res.Transcript.Outcome != contracts.OutcomeCannotFix || fx.fixLog() != "" || !strings.Contains(res.Summary, "condition unknown") {
		t.Fatalf("outcome %s (%s), action log %q", res.Transcript.Outcome, res.Summary, fx.fixLog())
	}
}

func TestRiskNeverIsPolicyBlocked(t *testing.T) {
	fx := newFixture(t)
	res := fx.run(fx.assistant(fx.options(findings.AutonomyFull, fx.fixAction("never"))))
	tr := res.Transcript
	equal(t, "steps", stepLines(tr.Steps)[2:], []string{"3:run_action:blocked:POLICY_BLOCKED:READING>READING"})
	if tr.Outcome != contracts.OutcomeCannotFix || fx.fixLog() != "" {
		t.Fatalf("outcome %s, action log %q", tr.Outcome, fx.fixLog())
	}
}

func TestMonitorNeverWrites(t *testing.T) {
	for _, risk := range []string{"low", "medium", "high"} {
		t.Run(risk, func(t *testing.T) {
			fx := newFixture(t)
			// The request asks for full autonomy; the current setting is
			// monitor, and the stricter one applies.
			a := fx.assistant(fx.options(findings.AutonomyMonitor, fx.fixAction(risk)))
			res, err := a.Run(context.Background(), Request{FindingID: fx.finding.ID, Attempt: 1, Autonomy: findings.AutonomyFull})
			if err != nil {
				t.Fatal(err)
			}
			if fx.fixLog() != "" {
				t.Fatal("an action ran under monitor")
			}
			last := res.Transcript.Steps[len(res.Transcript.Steps)-1]
			if last.Code != agent.CodePolicyBlocked || res.Transcript.Outcome != contracts.OutcomeCannotFix {
				t.Fatalf("transcript %s", mustJSON(t, res.Transcript))
			}
		})
	}
}

func TestResourceTextIsNeutralised(t *testing.T) {
	fx := newFixture(t)
	a := fx.assistant(fx.options(findings.AutonomyFull))
	s, err := a.newSession(sessionState{ID: "s", FindingID: fx.finding.ID, Attempt: 1, Driver: contracts.DriverPlaybook}, fx.finding, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.env.getResource(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if notes := mustJSON(t, out); strings.Contains(notes, "ignore previous instructions") || !strings.Contains(notes, "[neutralised:") {
		t.Fatalf("untrusted notes reached the model unchanged: %s", notes)
	}
	if _, err := os.Stat(filepath.Join(fx.dir, "fix.log")); err == nil {
		t.Fatal("unexpected action log")
	}
}
