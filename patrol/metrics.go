package patrol

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// Metrics are the patrol run metrics.
type Metrics struct {
	runs             *prometheus.CounterVec
	duration         prometheus.Histogram
	resources        *prometheus.GaugeVec
	signals          *prometheus.GaugeVec
	skipped          prometheus.Counter
	invalidResources prometheus.Gauge
}

var (
	allTriggers = []Trigger{TriggerManual, TriggerScheduled, TriggerStartup, TriggerAPI}
	allStatuses = []string{StatusError, StatusDegraded, StatusCritical, StatusIssuesFound, StatusHealthy}
)

// NewMetrics registers the patrol metrics on reg, with every label
// combination of the closed sets pre-created.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "patrold_patrol_runs_total", Help: "Patrol runs by trigger and final status."}, []string{"trigger", "status"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "patrold_patrol_run_duration_seconds", Help: "Duration of patrol runs.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 1200}}),
		resources:        prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "patrold_patrol_resources", Help: "Resources in the last run's snapshot by kind."}, []string{"kind"}),
		signals:          prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "patrold_patrol_signals", Help: "Signals detected in the last run by type and severity."}, []string{"type", "severity"}),
		skipped:          prometheus.NewCounter(prometheus.CounterOpts{Name: "patrold_patrol_skipped_ticks_total", Help: "Run requests refused because a run was in progress."}),
		invalidResources: prometheus.NewGauge(prometheus.GaugeOpts{Name: "patrold_patrol_invalid_resources", Help: "Resources dropped as invalid in the last run."}),
	}
	reg.MustRegister(m.runs, m.duration, m.resources, m.signals, m.skipped, m.invalidResources)
	for _, t := range allTriggers {
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

func (m *Metrics) skippedRun(Trigger) {
	if m != nil {
		m.skipped.Inc()
	}
}

func (m *Metrics) observe(rep *Report) {
	if m == nil || rep == nil {
		return
	}
	m.runs.WithLabelValues(string(rep.Trigger), rep.Status).Inc()
	m.duration.Observe(float64(rep.DurationMS) / 1000)
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
}
