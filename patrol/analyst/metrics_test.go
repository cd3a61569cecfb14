package analyst_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/patrold/patrold/model/script"
	"github.com/patrold/patrold/patrol/analyst"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, _ := scripted(t, []script.Turn{
		tools(get("c1", localZFS), get("c1b", "node/pve1")),
		tools(
			report("c2", localZFS, "capacity", "high_disk", "critical", "usage_percent 96.3"),
			report("c3", localZFS, "capacity", "other", "warning", "usage 99.9"),
		),
		text("Done."), // detection ends
		tools(report("e1", "node/pve1", "performance", "high_cpu", "warning", "node/pve1 is busy")),
		text("Done."), // evaluation ends
	}, func(o *analyst.Options) { o.Registerer = reg })
	analyze(t, a, input(t, loadSnap(t, "small-faults.json")))
	want := `
# HELP patrold_analyst_reports_total report_finding calls by outcome (filed or the refusal reason).
# TYPE patrold_analyst_reports_total counter
patrold_analyst_reports_total{outcome="already_reported"} 0
patrold_analyst_reports_total{outcome="filed"} 1
patrold_analyst_reports_total{outcome="invalid_input"} 0
patrold_analyst_reports_total{outcome="model_findings_capped"} 0
patrold_analyst_reports_total{outcome="not_found"} 0
patrold_analyst_reports_total{outcome="out_of_scope"} 1
patrold_analyst_reports_total{outcome="policy_disclosure"} 0
patrold_analyst_reports_total{outcome="unsupported_claim"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "patrold_analyst_reports_total"); err != nil {
		t.Error(err)
	}
	for _, c := range []struct {
		stage, outcome string
		want           float64
	}{
		{analyst.StageDetection, analyst.OutcomeFinalAnswer, 1},
		{analyst.StageEvaluation, analyst.OutcomeFinalAnswer, 1},
		{analyst.StageAssessment, analyst.OutcomeSkipped, 0}, // no active findings: not run at all
	} {
		if got := counterValue(t, reg, "patrold_analyst_stages_total", "stage="+c.stage, "outcome="+c.outcome); got != c.want {
			t.Errorf("%s/%s = %v, want %v", c.stage, c.outcome, got, c.want)
		}
	}
	// A second analyst on the same registry is refused, naming the metrics.
	if _, err := analyst.New(analyst.Options{Provider: &capture{}, Registerer: reg}); err == nil || !strings.Contains(err.Error(), "metrics") {
		t.Errorf("duplicate registration: %v", err)
	}
}
