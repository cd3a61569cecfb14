package patrol

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/store/records"
)

// Metrics are the patrol run metrics.
type Metrics struct {
	runs             *prometheus.CounterVec
	duration         prometheus.Histogram
	resources        *prometheus.GaugeVec
	signals          *prometheus.GaugeVec
	skipped          *prometheus.CounterVec
	invalidResources prometheus.Gauge
	inhibited        prometheus.Gauge
	lastSuccess      prometheus.Gauge
	modelSignals     prometheus.Counter
	modelMissed      prometheus.Counter
	// By model: the miss rate of each model a run named.
	modelSignalsBy *prometheus.CounterVec
	modelMissedBy  *prometheus.CounterVec
	prunedRows     *prometheus.CounterVec
}

// SkipReasons label patrold_patrol_skipped_ticks_total: why a run was not
// admitted, by who asked for it while another run held the lock.
var SkipReasons = map[Trigger]string{
	TriggerScheduled: "tick_overlap",    // a cron tick fell inside a run
	TriggerStartup:   "startup_overlap", // the startup run found one running
	TriggerAPI:       "api_conflict",    // POST /api/v1/runs answered 409
	TriggerManual:    "manual_overlap",  // a foreground run found one running
	TriggerAlert:     "alert_overlap",   // an alert's run found one running (it is coalesced)
}

var (
	// RunTriggers lists every trigger (the trigger label of the run
	// metrics, the trigger of a run report and event).
	RunTriggers = []Trigger{TriggerManual, TriggerScheduled, TriggerStartup, TriggerAPI, TriggerAlert}
	allStatuses = []string{StatusError, StatusDegraded, StatusCritical, StatusIssuesFound, StatusHealthy}
)

// NewMetrics registers the patrol metrics on reg, with every label
// combination of the closed sets pre-created.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "patrold_patrol_runs_total", Help: "Patrol runs by trigger and final status."}, []string{"trigger", "status"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "patrold_patrol_run_duration_seconds", Help: "Duration of patrol runs, from admission until the run record is committed.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 1200}}),
		resources: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "patrold_patrol_resources", Help: "Resources in the last run's snapshot by kind."}, []string{"kind"}),
		signals:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "patrold_patrol_signals", Help: "Signals detected in the last run by type and severity."}, []string{"type", "severity"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "patrold_patrol_skipped_ticks_total",
			Help: "Run requests refused because a run was in progress, by reason (tick_overlap: cron tick; api_conflict: API 409; startup_overlap; manual_overlap)."}, []string{"reason"}),
		invalidResources: prometheus.NewGauge(prometheus.GaugeOpts{Name: "patrold_patrol_invalid_resources", Help: "Resources dropped as invalid in the last run."}),
		inhibited: prometheus.NewGauge(prometheus.GaugeOpts{Name: "patrold_patrol_inhibited_findings",
			Help: "Active findings of the last run held (not published or investigated) because an active parent finding explains them."}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Name: "patrold_patrol_last_success_timestamp_seconds",
			Help: "Unix time the last run that did not end in error finished (0: none since the store was created)."}),
		modelSignals: prometheus.NewCounter(prometheus.CounterOpts{Name: "patrold_model_signals_total",
			Help: "Deterministic signals of runs analysed by the model."}),
		modelMissed: prometheus.NewCounter(prometheus.CounterOpts{Name: "patrold_model_missed_signals_total",
			Help: "Signals of model-analysed runs that no model finding matched (filed deterministically instead)."}),
		modelSignalsBy: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "patrold_model_signals_by_model_total",
			Help: "Deterministic signals of runs analysed by the model, by provider and model."}, []string{"provider", "model"}),
		modelMissedBy: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "patrold_model_missed_signals_by_model_total",
			Help: "Signals of model-analysed runs that no model finding matched, by provider and model."}, []string{"provider", "model"}),
	}
	m.prunedRows = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "patrold_store_pruned_rows_total",
		Help: "History rows deleted by retention, by table."}, []string{"table"})
	for _, t := range records.PruneTables {
		m.prunedRows.WithLabelValues(t)
	}
	reg.MustRegister(m.runs, m.duration, m.resources, m.signals, m.skipped, m.invalidResources, m.inhibited, m.lastSuccess, m.modelSignals, m.modelMissed, m.modelSignalsBy, m.modelMissedBy, m.prunedRows)
	for _, r := range SkipReasons {
		m.skipped.WithLabelValues(r)
	}
	for _, t := range RunTriggers {
		for _, s := range allStatuses {
			m.runs.WithLabelValues(string(t), s)
		}
	}
	for _, k := range snapshot.Kinds {
		m.resources.WithLabelValues(string(k))
	}
	for _, t := range signals.Types {
		for _, s := range []string{signals.SeverityWarning, signals.SeverityCritical} {
			m.signals.WithLabelValues(string(t), s)
		}
	}
	return m
}

func (m *Metrics) skippedRun(t Trigger) {
	if m != nil {
		m.skipped.WithLabelValues(SkipReasons[t]).Inc()
	}
}

func (m *Metrics) pruned(p records.Pruned) {
	if m == nil {
		return
	}
	for t, n := range p {
		m.prunedRows.WithLabelValues(t).Add(float64(n))
	}
}

// SetLastSuccess sets the last-successful-run gauge (the daemon seeds it
// from the store at start).
func (m *Metrics) SetLastSuccess(t time.Time) {
	if m != nil && !t.IsZero() {
		m.lastSuccess.Set(float64(t.Unix()))
	}
}

// observe records a finished run; took is the whole run including its
// commit (the report's duration_ms stops where the commit starts).
func (m *Metrics) observe(rep *Report, took time.Duration) {
	if m == nil || rep == nil {
		return
	}
	m.runs.WithLabelValues(string(rep.Trigger), rep.Status).Inc()
	m.duration.Observe(took.Seconds())
	if rep.Status != StatusError {
		m.SetLastSuccess(rep.FinishedAt)
	}
	if rep.Analysis == AnalysisModel {
		m.modelSignals.Add(float64(len(rep.Signals)))
		m.modelMissed.Add(float64(len(rep.UnmatchedSignals)))
		if rep.Model != nil {
			m.modelSignalsBy.WithLabelValues(rep.Model.Provider, rep.Model.Model).Add(float64(len(rep.Signals)))
			m.modelMissedBy.WithLabelValues(rep.Model.Provider, rep.Model.Model).Add(float64(len(rep.UnmatchedSignals)))
		}
	}
	if rep.Status == StatusError && len(rep.Resources) == 0 {
		return // nothing was collected: keep the last run's gauges
	}
	for _, k := range snapshot.Kinds {
		m.resources.WithLabelValues(string(k)).Set(float64(rep.Resources[string(k)]))
	}
	m.signals.Reset()
	for _, t := range signals.Types {
		for _, s := range []string{signals.SeverityWarning, signals.SeverityCritical} {
			m.signals.WithLabelValues(string(t), s)
		}
	}
	for _, s := range rep.Signals {
		m.signals.WithLabelValues(string(s.Type), s.Severity).Inc()
	}
	m.invalidResources.Set(float64(len(rep.InvalidResources)))
	m.inhibited.Set(float64(rep.inhibited))
}
