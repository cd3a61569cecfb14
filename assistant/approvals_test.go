package assistant

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/script"
	"github.com/patrold/patrold/store/storetest"
)

// queue runs a playbook session at autonomy approval; it must end
// fix_queued with one pending approval.
func queue(t *testing.T, fx *fixture, a *Assistant, risk Risk) (*Result, Approval) {
	t.Helper()
	res := fx.run(a)
	if res.Transcript.Outcome != contracts.OutcomeFixQueued || res.ApprovalID == "" || fx.fixLog() != "" {
		t.Fatalf("queued session: %s (action log %q)", mustJSON(t, res), fx.fixLog())
	}
	list, next, err := a.List(context.Background(), findings.Page{})
	if err != nil || next != "" {
		t.Fatal(err)
	}
	views := list.([]ApprovalView)
	pending := make([]Approval, len(views))
	for i, v := range views {
		pending[i] = v.Approval
		act, _ := a.action(v.Action)
		if v.ReasonBy != ReasonByModel || v.Declared.Description != act.Description || !slices.Equal(v.Declared.Command, act.Command) ||
			v.Declared.Risk != act.Risk || v.Condition == nil || v.Condition.Key != fx.finding.Key || v.Target.ID != v.ResourceID {
			t.Fatalf("approval view %s, declared action %s", mustJSON(t, v), mustJSON(t, act))
		}
	}
	if len(pending) != 1 || pending[0].ID != res.ApprovalID || pending[0].State != ApprovalPending ||
		pending[0].Action != "prune_snapshots" || pending[0].Risk != risk || !pending[0].ExpiresAt.Equal(t0.Add(DefaultApprovalTTL)) {
		t.Fatalf("pending approvals %s", mustJSON(t, pending))
	}
	return res, pending[0]
}

func TestApprovalQueuesThenResumesFromPersistedFSM(t *testing.T) {
	fx := newFixture(t)
	a := fx.assistant(fx.options(findings.AutonomyApproval, fx.fixAction("low")))
	queued, ap := queue(t, fx, a, RiskLow)
	equal(t, "queued steps", stepLines(queued.Transcript.Steps)[2:], []string{"3:run_action:approval_required:APPROVAL_REQUIRED:READING>READING"})

	// The persisted state machine is the one the session stopped in.
	p, err := a.load(context.Background(), ap.ID)
	if err != nil {
		t.Fatal(err)
	}
	if p.fsm.State != agent.StateReading || p.fsm.WroteThisEpisode || p.state.Turns != 3 || len(p.state.Transcript.Steps) != 3 {
		t.Fatalf("persisted session: fsm %+v turns %d", p.fsm, p.state.Turns)
	}

	// A new Assistant (a restarted daemon) resumes it.
	fx.clock.advance(time.Minute)
	a2 := fx.assistant(fx.options(findings.AutonomyApproval, fx.fixAction("low")))
	out, err := a2.Approve(context.Background(), ap.ID, "ops")
	if err != nil {
		t.Fatal(err)
	}
	d := out.(*DecisionResult)
	tr := d.Transcript
	if d.Outcome != contracts.OutcomeFixVerified || d.Approval.State != ApprovalApproved || d.Approval.DecidedBy != "ops" || fx.fixLog() == "" {
		t.Fatalf("decision %s", mustJSON(t, d))
	}
	// Resumed from READING (a fresh FSM would be RESOLVING and refuse the
	// write); the target is resolved live again before the approved call.
	equal(t, "resumed steps", stepLines(tr.Steps)[3:], []string{
		"4:resolve_target:ok::READING>READING",
		"5:run_action:ok::READING>VERIFYING",
		"6:check_condition:ok::VERIFYING>VERIFYING",
	})
	if tr.SessionID != queued.Transcript.SessionID || tr.FinalState != agent.StateReading {
		t.Fatalf("transcript %s", mustJSON(t, tr))
	}
	equal(t, "events", fx.pub.types(), []string{
		"patrold.approval.requested", contracts.TypeRemediationOutcome, "patrold.approval.approved", contracts.TypeRemediationOutcome,
	})
	outs := fx.pub.outcomes(t)
	if outs[0].Outcome != contracts.OutcomeFixQueued || outs[1].Outcome != contracts.OutcomeFixVerified || outs[1].SessionID != outs[0].SessionID {
		t.Fatalf("outcomes %+v", outs)
	}
	// fix_queued did not end the investigation for good: the finding is fixed.
	f, _ := fx.st.Get(context.Background(), fx.finding.ID)
	if f.Status != findings.StatusResolved {
		t.Fatalf("finding %+v", f)
	}
	if _, err := a2.Approve(context.Background(), ap.ID, "ops"); !errors.Is(err, ErrApprovalDecided) {
		t.Fatalf("second approve: %v", err)
	}
}

func TestApprovalDenied(t *testing.T) {
	fx := newFixture(t)
	a := fx.assistant(fx.options(findings.AutonomyAssisted, fx.fixAction("high")))
	_, ap := queue(t, fx, a, RiskHigh)
	out, err := a.Deny(context.Background(), ap.ID, "ops")
	if err != nil {
		t.Fatal(err)
	}
	d := out.(*DecisionResult)
	if d.Outcome != contracts.OutcomeFixRejected || d.Approval.State != ApprovalDenied || fx.fixLog() != "" {
		t.Fatalf("decision %s", mustJSON(t, d))
	}
	f, _ := fx.st.Get(context.Background(), fx.finding.ID)
	if f.LastOutcome != string(contracts.OutcomeFixRejected) {
		t.Fatalf("finding outcome %q", f.LastOutcome)
	}
	if _, err := a.Approve(context.Background(), ap.ID, "ops"); !errors.Is(err, ErrApprovalDecided) {
		t.Fatalf("approve after deny: %v", err)
	}
	if _, err := a.Deny(context.Background(), "nope", "ops"); !errors.Is(err, ErrApprovalNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
}

func TestApprovalExpires(t *testing.T) {
	fx := newFixture(t)
	a := fx.assistant(fx.options(findings.AutonomyApproval, fx.fixAction("low")))
	_, ap := queue(t, fx, a, RiskLow)

	if got, err := a.ExpireApprovals(context.Background(), t0.Add(DefaultApprovalTTL-time.Second)); err != nil || len(got) != 0 {
		t.Fatalf("early sweep: %v %v", got, err)
	}
	got, err := a.ExpireApprovals(context.Background(), t0.Add(DefaultApprovalTTL))
	if err != nil || len(got) != 1 || got[0].ID != ap.ID || got[0].State != ApprovalExpired {
		t.Fatalf("sweep: %v %v", got, err)
	}
	fx.clock.advance(DefaultApprovalTTL)
	if _, err := a.Approve(context.Background(), ap.ID, "ops"); !errors.Is(err, ErrApprovalExpired) {
		t.Fatalf("approve after expiry: %v", err)
	}
	if list, _, _ := a.List(context.Background(), findings.Page{}); len(list.([]ApprovalView)) != 0 {
		t.Fatalf("still listed: %v", list)
	}
	outs := fx.pub.outcomes(t)
	if len(outs) != 2 || outs[1].Outcome != contracts.OutcomeNeedsAttention || fx.fixLog() != "" {
		t.Fatalf("outcomes %+v", outs)
	}
	equal(t, "events", fx.pub.types()[2:3], []string{"patrold.approval.expired"})
}

func TestApproveAfterTTLWithoutSweepExpires(t *testing.T) {
	fx := newFixture(t)
	a := fx.assistant(fx.options(findings.AutonomyApproval, fx.fixAction("low")))
	_, ap := queue(t, fx, a, RiskLow)
	fx.clock.advance(DefaultApprovalTTL + time.Second)
	if _, err := a.Approve(context.Background(), ap.ID, "ops"); !errors.Is(err, ErrApprovalExpired) {
		t.Fatalf("approve: %v", err)
	}
	if fx.fixLog() != "" {
		t.Fatal("an expired approval ran its action")
	}
	ps, _ := a.Approvals(context.Background(), fx.finding.ID)
	if len(ps) != 1 || ps[0].State != ApprovalExpired {
		t.Fatalf("approvals %+v", ps)
	}
}

func TestModelApprovalResumesConversation(t *testing.T) {
	fx := newFixture(t)
	o := fx.options(findings.AutonomyAssisted, fx.fixAction("medium"))
	o.Provider = scripted(t,
		call(ToolResolveTarget, `{}`),
		call(ToolRunAction, `{"action":"prune_snapshots"}`),
		// after the approval:
		say("Done."), // refused until read back
		call(ToolCheckCondition, `{}`),
		say("Pruned; the condition cleared."),
	)
	a := fx.assistant(o)
	queued := fx.run(a)
	if queued.Transcript.Outcome != contracts.OutcomeFixQueued {
		t.Fatalf("queued %s", mustJSON(t, queued))
	}
	out, err := a.Approve(context.Background(), queued.ApprovalID, "ops")
	if err != nil {
		t.Fatal(err)
	}
	d := out.(*DecisionResult)
	tr := d.Transcript
	if d.Outcome != contracts.OutcomeFixVerified || tr.FinalAnswerBlocked != 1 || tr.FinalAnswer.String() != "Pruned; the condition cleared." {
		t.Fatalf("decision %s", mustJSON(t, d))
	}
	equal(t, "steps", stepLines(tr.Steps), []string{
		"1:resolve_target:ok::RESOLVING>READING",
		"2:run_action:approval_required:APPROVAL_REQUIRED:READING>READING",
		"3:resolve_target:ok::READING>READING",
		"4:run_action:ok::READING>VERIFYING",
		"6:check_condition:ok::VERIFYING>VERIFYING",
	})
	// One recording for the whole session, before and after the approval.
	rec, err := SessionExchange(context.Background(), fx.st, tr.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int
	for _, ex := range rec.Exchanges {
		seqs = append(seqs, ex.Seq)
	}
	equal(t, "exchange seqs", seqs, []int{1, 2, 3, 4, 5})
	if last := rec.Exchanges[4].Response; last == nil || last.Text != "Pruned; the condition cleared." {
		t.Fatalf("last exchange %+v", rec.Exchanges[4])
	}
}

func TestConcurrentApprovalsRunTheActionOnce(t *testing.T) {
	fx := newFixture(t)
	a := fx.assistant(fx.options(findings.AutonomyApproval, fx.fixAction("low")))
	_, ap := queue(t, fx, a, RiskLow)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := a.Approve(context.Background(), ap.ID, "ops")
			errs <- err
		}()
	}
	won := 0
	for range 4 {
		switch err := <-errs; {
		case err == nil:
			won++
		case !errors.Is(err, ErrApprovalDecided):
			t.Fatalf("approve: %v", err)
		}
	}
	if won != 1 || len(splitLines(fx.fixLog())) != 1 {
		t.Fatalf("%d approvals won, action log %q", won, fx.fixLog())
	}
}

// TestResumedSessionKeepsItsEvidenceBudget: the calls made before an
// approval count after it. Playbook: resolve, check, (approval), then on
// resume resolve, the action and its verifying check: five calls.
func TestResumedSessionKeepsItsEvidenceBudget(t *testing.T) {
	for _, c := range []struct {
		budget int
		want   contracts.Outcome
		steps  []string
	}{
		{5, contracts.OutcomeFixVerified, []string{"4:resolve_target:ok::READING>READING", "5:run_action:ok::READING>VERIFYING", "6:check_condition:ok::VERIFYING>VERIFYING"}},
		{4, contracts.OutcomeCannotFix, []string{"4:resolve_target:ok::READING>READING", "5:run_action:blocked:BUDGET_EXHAUSTED:READING>READING"}},
	} {
		fx := newFixture(t)
		o := fx.options(findings.AutonomyApproval, fx.fixAction("low"))
		o.EvidenceBudget = c.budget
		a := fx.assistant(o)
		_, ap := queue(t, fx, a, RiskLow)
		out, err := a.Approve(context.Background(), ap.ID, "ops")
		if err != nil {
			t.Fatal(err)
		}
		tr := out.(*DecisionResult).Transcript
		equal(t, "resumed steps", stepLines(tr.Steps)[3:], c.steps)
		if tr.Outcome != c.want || (c.want == contracts.OutcomeCannotFix) != (fx.fixLog() == "") {
			t.Fatalf("budget %d: outcome %s, action log %q", c.budget, tr.Outcome, fx.fixLog())
		}
	}
}

// TestResumedSessionKeepsItsCostBudget: per_run_usd bounds the whole
// session, before and after its approval, and the stored cost is not
// counted twice.
func TestResumedSessionKeepsItsCostBudget(t *testing.T) {
	costly := func(tt script.Turn) script.Turn {
		tt.Usage = &model.Usage{InputTokens: 1}
		return tt
	}
	fx := newFixture(t)
	o := fx.options(findings.AutonomyAssisted, fx.fixAction("medium"))
	o.ModelName, o.Prices, o.Budget = "script", model.Prices{"script": {InputPerMTok: 1e6}}, model.BudgetOptions{PerRunUSD: 2.5}
	o.Provider = scripted(t,
		costly(call(ToolResolveTarget, `{}`)),
		costly(call(ToolRunAction, `{"action":"prune_snapshots"}`)),
		costly(say("Done.")), // $3 spent: the budget stops the session here
		costly(call(ToolCheckCondition, `{}`)),
		costly(say("Pruned; the condition cleared.")),
	)
	a := fx.assistant(o)
	queued := fx.run(a)
	if queued.Transcript.Outcome != contracts.OutcomeFixQueued || queued.CostUSD != 2 {
		t.Fatalf("queued %s", mustJSON(t, queued))
	}
	out, err := a.Approve(context.Background(), queued.ApprovalID, "ops")
	if err != nil {
		t.Fatal(err)
	}
	d := out.(*DecisionResult)
	if d.Outcome != contracts.OutcomeFixVerificationUnknown || !strings.Contains(d.Summary, "stopped calling the model") {
		t.Fatalf("decision %s", mustJSON(t, d))
	}
	var cost float64
	if err := storetest.RawDB(t, fx.st.Path()).QueryRow(`SELECT cost_usd FROM remediation_sessions WHERE id = ?`, queued.Transcript.SessionID).Scan(&cost); err != nil || cost != 3 {
		t.Fatalf("stored cost %g (%v), want 3", cost, err)
	}
}
