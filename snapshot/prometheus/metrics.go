package prometheus

import (
	"errors"

	promclient "github.com/prometheus/client_golang/prometheus"
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
	m.duration, err = register(reg, m.duration)
	if err != nil {
		return nil, err
	}
	if m.failures, err = register(reg, m.failures); err != nil {
		return nil, err
	}
	if m.skipped, err = register(reg, m.skipped); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the collector already registered under
// the same name (a source rebuilt on reload keeps counting into it).
func register[C promclient.Collector](reg promclient.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are promclient.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}
