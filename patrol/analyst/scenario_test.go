package analyst_test

import (
	"encoding/json"
	"github.com/prometheus/client_golang/prometheus"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/script"
	"github.com/patrold/patrold/patrol/analyst"
	"github.com/patrold/patrold/signals"
)

const localZFS = "storage/pve1/local-zfs"

// (a) The model files high_disk on local-zfs with grounded evidence: that
// signal is matched, the eight others are not.
func TestModelFilesGroundedFinding(t *testing.T) {
	a, c := scripted(t, []script.Turn{
		tools(get("c1", localZFS)),
		tools(report("c2", localZFS, "capacity", "High-Disk", "critical", "usage_percent 96.3 is above the critical threshold 95")),
		text("Done."),
	}, nil)
	in := input(t, loadSnap(t, "small-faults.json"))
	if len(in.Signals) != 9 {
		t.Fatalf("fixture: %d signals, want 9", len(in.Signals))
	}
	an := analyze(t, a, in)

	if len(an.Observations) != 1 {
		t.Fatalf("observations: %+v", an.Observations)
	}
	o := an.Observations[0]
	if o.Key != "high_disk" || o.ResourceID != localZFS || o.Category != findings.CategoryCapacity || o.Source != findings.SourceModel || o.Severity != findings.SeverityCritical {
		t.Errorf("observation: %+v", o)
	}
	matched, unmatched := signals.Match(in.Signals, an.Filed)
	if got := refs(matched); !slices.Equal(got, []string{"high_disk " + localZFS}) {
		t.Errorf("matched %v", got)
	}
	if len(unmatched) != 8 || slices.Contains(refs(unmatched), "high_disk "+localZFS) {
		t.Errorf("unmatched %v", refs(unmatched))
	}
	mustContain(t, "report result", c.result(t, "c2"), `"ok":true`, findings.ID(localZFS, findings.CategoryCapacity, "high_disk"))
	if len(an.Reasons) != 0 || len(an.Errors) != 0 {
		t.Errorf("reasons %v errors %v", an.Reasons, an.Errors)
	}
	// Detection took three turns; the evaluation pass one (the script's
	// closing text); no sweep without active findings.
	if an.Usage.Turns != 4 || c.calls() != 4 || an.Usage.InputTokens == 0 || an.Usage.OutputTokens == 0 {
		t.Errorf("usage %+v, calls %d", an.Usage, c.calls())
	}
	var rec model.Recording
	if err := json.Unmarshal(an.Exchange, &rec); err != nil || len(rec.Exchanges) != 4 {
		t.Fatalf("exchange: %v, %d exchanges", err, len(rec.Exchanges))
	}
	if rec.Usage() != (model.Usage{InputTokens: an.Usage.InputTokens, OutputTokens: an.Usage.OutputTokens}) {
		t.Errorf("recorded usage %+v, analysis usage %+v", rec.Usage(), an.Usage)
	}
}

// (b) A report whose evidence names a figure or a resource id no tool
// result showed is refused as unsupported and not filed.
func TestUnsupportedClaimsAreRejected(t *testing.T) {
	a, c := scripted(t, []script.Turn{
		tools(get("c1", localZFS)),
		tools(
			report("c2", localZFS, "capacity", "high_disk", "critical", "usage_percent 97.5 on the pool"),
			report("c3", localZFS, "capacity", "pool_shared", "warning", "usage 96.3, the same pool backs storage/pve9/ghost"),
		),
		text("Done."),
	}, nil)
	in := input(t, loadSnap(t, "small-faults.json"))
	an := analyze(t, a, in)

	for id, claim := range map[string]string{"c2": `"97.5 (usage)"`, "c3": `"storage/pve9/ghost"`} {
		res := c.result(t, id)
		mustContain(t, id+" result", res, `"ok":false`, `"code":"POLICY_BLOCKED"`, `"reason":"unsupported_claim"`, claim)
	}
	if len(an.Observations) != 0 || len(an.Filed) != 0 {
		t.Fatalf("unsupported reports were filed: %+v %+v", an.Observations, an.Filed)
	}
	if matched, _ := signals.Match(in.Signals, an.Filed); len(matched) != 0 {
		t.Errorf("matched %v", refs(matched))
	}
}

// (c) The evaluation pass files one unmatched signal; a report outside the
// unmatched scope and a second report for the same signal are refused.
func TestEvaluationPassScope(t *testing.T) {
	a, c := scripted(t, []script.Turn{
		text("Nothing stands out."), // detection
		tools(get("e1", "vm/102"), get("e1b", "node/pve1")),
		tools(
			report("e2", "vm/102", "reliability", "guest_unreachable", "warning", "vm/102 is running with reachable false"),
			report("e3", "node/pve1", "performance", "high_cpu", "warning", "node/pve1 is busy"),
		),
		tools(report("e4", "vm/102", "reliability", "vm_down", "critical", "vm/102 still unreachable")),
		text("Done."),
	}, nil)
	in := input(t, loadSnap(t, "small-faults.json"))
	an := analyze(t, a, in)

	mustContain(t, "in-scope report", c.result(t, "e2"), `"ok":true`)
	mustContain(t, "out-of-scope report", c.result(t, "e3"), `"code":"POLICY_BLOCKED"`, `"reason":"out_of_scope"`)
	mustContain(t, "second report", c.result(t, "e4"), `"code":"POLICY_BLOCKED"`, `"reason":"already_reported"`)
	if len(an.Observations) != 1 || an.Observations[0].ResourceID != "vm/102" || an.Observations[0].Key != "guest_unreachable" {
		t.Fatalf("observations %+v", an.Observations)
	}
	matched, unmatched := signals.Match(in.Signals, an.Filed)
	if got := refs(matched); !slices.Equal(got, []string{"guest_unreachable vm/102"}) || len(unmatched) != 8 {
		t.Errorf("matched %v unmatched %v", got, refs(unmatched))
	}
	// The evaluation pass is advertised report_finding but not assess_finding.
	reqs := c.requests()
	for _, d := range reqs[1].Tools {
		if d.Name == analyst.ToolAssessFinding {
			t.Errorf("evaluation pass advertises %s", d.Name)
		}
	}
}

// The evaluation pass stops after evaluationTurns (5) turns.
func TestEvaluationPassTurnLimit(t *testing.T) {
	turns := []script.Turn{text("Nothing.")}
	for i := range 10 {
		turns = append(turns, tools(call("l"+string(rune('a'+i)), analyst.ToolListResources, map[string]any{"offset": i})))
	}
	a, c := scripted(t, turns, nil)
	analyze(t, a, input(t, loadSnap(t, "small-faults.json")))
	// docs/MODEL_STAGES.md: the evaluation pass has 5 turns.
	if got := c.calls(); got != 1+5 {
		t.Errorf("calls %d, want 1 detection + 5 evaluation", got)
	}
}

// (d) A per-run budget exceeded mid-loop stops after the current turn:
// what that turn filed stays, nothing else is asked of the model.
func TestBudgetExhaustedMidLoop(t *testing.T) {
	small, big := model.Usage{InputTokens: 100}, model.Usage{InputTokens: 1000}
	a, c := scripted(t, []script.Turn{
		{ToolCalls: []model.ToolCall{get("c1", localZFS)}, Usage: &small},
		{ToolCalls: []model.ToolCall{report("c2", localZFS, "capacity", "high_disk", "critical", "usage 96.3")}, Usage: &big},
		text("never reached"),
	}, func(o *analyst.Options) {
		o.Prices = model.Prices{"test-model": {InputPerMTok: 1000}} // $0.001 a token
		o.Budget = model.BudgetOptions{PerRunUSD: 1.0}
	})
	an := analyze(t, a, input(t, loadSnap(t, "small-faults.json")))
	if c.calls() != 2 {
		t.Errorf("model called %d times, want 2 (stop after the turn that crossed the limit)", c.calls())
	}
	if !slices.Equal(an.Reasons, []string{model.ReasonBudgetExhausted}) {
		t.Errorf("reasons %v", an.Reasons)
	}
	if len(an.Observations) != 1 || an.Observations[0].ResourceID != localZFS {
		t.Errorf("the report of the last turn must stay: %+v", an.Observations)
	}
	if an.Usage.Turns != 2 || an.Usage.CostUSD < 1.09 || an.Usage.CostUSD > 1.11 {
		t.Errorf("usage %+v", an.Usage)
	}
}

// (d) With the day budget already spent, no context is built and the
// model is never called.
func TestBudgetPreflightMakesNoCall(t *testing.T) {
	ledger := &model.MemoryLedger{}
	ledger.Add(testNow.Add(-time.Hour), 5)
	reg := prometheus.NewRegistry()
	a, c := scripted(t, []script.Turn{tools(get("c1", localZFS))}, func(o *analyst.Options) {
		o.Prices = model.Prices{"test-model": {InputPerMTok: 1}}
		o.Budget = model.BudgetOptions{PerDayUSD: 5}
		o.Ledger = ledger
		o.Registerer = reg
	})
	an := analyze(t, a, input(t, loadSnap(t, "small-faults.json")))
	if c.calls() != 0 {
		t.Fatalf("model called %d times after a failed pre-flight", c.calls())
	}
	if !slices.Equal(an.Reasons, []string{model.ReasonBudgetExhausted}) || len(an.Filed) != 0 || an.Exchange != nil {
		t.Errorf("analysis %+v", an)
	}
	// No context was built: vm/102's notes were never even neutralised.
	if n := counterValue(t, reg, "patrold_prompt_neutralised_total", "rule=instruction_override"); n != 0 {
		t.Errorf("the seed context was built before the pre-flight (neutraliser ran %v times)", n)
	}
	if n := counterValue(t, reg, "patrold_analyst_preflight_skips_total"); n != 1 {
		t.Errorf("preflight skips %v", n)
	}
	if n := counterValue(t, reg, "patrold_analyst_stages_total", "stage=detection", "outcome=skipped"); n != 1 {
		t.Errorf("detection skipped %v", n)
	}
	// Spend from 25 hours ago is outside the day window: the model runs.
	old := &model.MemoryLedger{}
	old.Add(testNow.Add(-25*time.Hour), 5)
	a, c = scripted(t, []script.Turn{text("ok")}, func(o *analyst.Options) {
		o.Prices = model.Prices{"test-model": {InputPerMTok: 1}}
		o.Budget = model.BudgetOptions{PerDayUSD: 5}
		o.Ledger = old
	})
	if an := analyze(t, a, input(t, loadSnap(t, "small-faults.json"))); c.calls() == 0 || len(an.Reasons) != 0 {
		t.Errorf("calls %d reasons %v", c.calls(), an.Reasons)
	}
}

func TestUsageIncludesEveryStage(t *testing.T) {
	a, _ := scripted(t, []script.Turn{text("a"), text("b")}, nil)
	an := analyze(t, a, input(t, loadSnap(t, "small-faults.json")))
	if an.Usage.Turns != 2 || !strings.Contains(string(an.Exchange), `"seq":2`) {
		t.Errorf("usage %+v", an.Usage)
	}
}

// A signal a deterministic parent of the run explains (Held: an
// operation window, an offline node) is not offered again: the
// evaluation pass scopes only the others, and a report on a held one is
// out of scope. With every unmatched signal held there is no pass.
func TestEvaluationPassSkipsHeld(t *testing.T) {
	in := input(t, loadSnap(t, "small-faults.json"))
	unreachable := signals.Key{Type: signals.TypeGuestUnreachable, ResourceID: "vm/102"}
	t.Run("one held", func(t *testing.T) {
		a, c := scripted(t, []script.Turn{
			text("Nothing stands out."), // detection
			tools(get("e0", "vm/102")),
			tools(report("e1", "vm/102", "reliability", "guest_unreachable", "warning", "vm/102 is running with reachable false")),
			text("Done."),
		}, nil)
		in := in
		in.Held = map[signals.Key]bool{unreachable: true}
		an := analyze(t, a, in)
		mustContain(t, "report on a held signal", c.result(t, "e1"), `"code":"POLICY_BLOCKED"`, `"reason":"out_of_scope"`)
		if len(an.Observations) != 0 {
			t.Errorf("observations %+v, want none", an.Observations)
		}
		seed := ""
		for _, m := range c.requests()[1].Messages {
			if strings.Contains(m.Content, "unmatched signals _") {
				seed = m.Content
			}
		}
		if strings.Contains(seed, `"vm/102"`) || !strings.Contains(seed, "unmatched signals _8 of 8_") {
			t.Errorf("evaluation seed offers the held vm/102, or not the 8 others:\n%s", seed)
		}
	})
	t.Run("all held", func(t *testing.T) {
		a, c := scripted(t, []script.Turn{text("Nothing stands out.")}, nil)
		in := in
		in.Held = map[signals.Key]bool{}
		for _, s := range in.Signals {
			in.Held[s.Key()] = true
		}
		an := analyze(t, a, in)
		if c.calls() != 1 || an.Usage.Turns != 1 {
			t.Errorf("calls %d, turns %d; want the detection turn alone", c.calls(), an.Usage.Turns)
		}
	})
}
