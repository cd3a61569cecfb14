package prometheus

import (
	promclient "github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/internal/promreg"
)

// metrics of the Prometheus source; every query label is pre-created.
type metrics struct {
	duration *promclient.HistogramVec
	failures *promclient.CounterVec
	skipped  *promclient.CounterVec
}

func newMetrics(reg promclient.Registerer) (*metrics, error) {
	m := &metrics{
		duration: promclient.NewHistogramVec(promclient.HistogramOpts{
			Name:    "patrold_source_prometheus_query_duration_seconds",
			Help:    "Duration of one PromQL query of the prometheus snapshot source.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"query"}),
		failures: promclient.NewCounterVec(promclient.CounterOpts{
			Name: "patrold_source_prometheus_query_failures_total",
			Help: "PromQL queries of the prometheus snapshot source that failed.",
		}, []string{"query"}),
		skipped: promclient.NewCounterVec(promclient.CounterOpts{
			Name: "patrold_source_prometheus_samples_skipped_total",
			Help: "Samples ignored because they were not finite or lacked the labels naming their resource.",
		}, []string{"query"}),
	}
	for _, name := range QueryNames() {
		m.duration.WithLabelValues(name)
		m.failures.WithLabelValues(name)
		m.skipped.WithLabelValues(name)
	}
	if err := promreg.Register(reg, m.duration, m.failures, m.skipped); err != nil {
		return nil, err
	}
	return m, nil
}

// Metrics are the source's collectors. Build them once per registry with
// NewMetrics and pass them in Options.Metrics to every source built on that
// registry: one rebuilt on reload keeps counting into them.
type Metrics struct{ m *metrics }

// NewMetrics builds the collectors and registers them on reg (nil:
// unregistered); a second registration on the same registry is an error.
func NewMetrics(reg promclient.Registerer) (*Metrics, error) {
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Metrics{m: m}, nil
}
