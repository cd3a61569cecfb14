package analyst

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Stage outcomes (label values of patrold_analyst_stages_total).
const (
	OutcomeFinalAnswer     = "final_answer"
	OutcomeTurnLimit       = "turn_limit"
	OutcomeBudgetExhausted = "budget_exhausted"
	OutcomeModelFailed     = "model_failed"
	OutcomeContextFull     = "context_full"
	OutcomeSkipped         = "skipped"
)

const (
	reportFiled    = "filed"
	reportInvalid  = "invalid_input"
	reportNotFound = "not_found"

	verdictAccepted     = "accepted"
	verdictConfirmed    = "confirmed"
	verdictNotConfirmed = "not_confirmed"
)

var (
	stageNames     = []string{StageDetection, StageEvaluation, StageAssessment}
	stageOutcomes  = []string{OutcomeFinalAnswer, OutcomeTurnLimit, OutcomeBudgetExhausted, OutcomeModelFailed, OutcomeContextFull, OutcomeSkipped}
	reportOutcomes = []string{reportFiled, reportInvalid, reportNotFound, ReasonDisclosure, ReasonUnsupportedClaim, ReasonOutOfScope, ReasonAlreadyReported, ReasonCapped}
	verdictPairs   = [][2]string{{VerdictPresent, verdictAccepted}, {VerdictUncertain, verdictAccepted}, {VerdictResolved, verdictConfirmed}, {VerdictResolved, verdictNotConfirmed}}
)

// metrics are the analyst's Prometheus metrics; every label combination
// of the closed sets is pre-created.
type metrics struct {
	stages    *prometheus.CounterVec
	reports   *prometheus.CounterVec
	verdicts  *prometheus.CounterVec
	preflight prometheus.Counter
	withheld  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		stages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "patrold_analyst_stages_total",
			Help: "Model stages run, by stage and how they ended.",
		}, []string{"stage", "outcome"}),
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "patrold_analyst_reports_total",
			Help: "report_finding calls by outcome (filed or the refusal reason).",
		}, []string{"outcome"}),
		verdicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "patrold_analyst_verdicts_total",
			Help: "assess_finding verdicts, and whether a resolved verdict was confirmed by the deterministic check.",
		}, []string{"verdict", "outcome"}),
		preflight: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "patrold_analyst_preflight_skips_total",
			Help: "Runs whose model stages were skipped because the budget was exhausted before they started.",
		}),
		withheld: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "patrold_analyst_withheld_answers_total",
			Help: "Model answers withheld by the disclosure guard.",
		}),
	}
	for _, s := range stageNames {
		for _, o := range stageOutcomes {
			m.stages.WithLabelValues(s, o)
		}
	}
	for _, o := range reportOutcomes {
		m.reports.WithLabelValues(o)
	}
	for _, p := range verdictPairs {
		m.verdicts.WithLabelValues(p[0], p[1])
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.stages, m.reports, m.verdicts, m.preflight, m.withheld} {
		errs = append(errs, reg.Register(c))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("register analyst metrics: %w", err)
	}
	return m, nil
}

func (m *metrics) stage(name, outcome string) { m.stages.WithLabelValues(name, outcome).Inc() }
func (m *metrics) report(outcome string)      { m.reports.WithLabelValues(outcome).Inc() }
func (m *metrics) verdict(v, outcome string)  { m.verdicts.WithLabelValues(v, outcome).Inc() }
