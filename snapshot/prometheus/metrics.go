package prometheus

import (
	promclient "github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/internal/metricsreg"
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
	if reg == nil {
		return m, nil
	}
	var err error
	m.duration, err = metricsreg.Register(reg, m.duration)
	if err != nil {
		return nil, err
	}
	if m.failures, err = metricsreg.Register(reg, m.failures); err != nil {
		return nil, err
	}
	if m.skipped, err = metricsreg.Register(reg, m.skipped); err != nil {
		return nil, err
	}
	return m, nil
}
