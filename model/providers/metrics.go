package providers

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/model"
)

// Label values.
const (
	outcomeOK          = "ok"
	outcomeCircuitOpen = "circuit_open"
	directionInput     = "input"
	directionOutput    = "output"
)

// outcomes is the closed set of the outcome label.
var outcomes = []string{outcomeOK, outcomeCircuitOpen, string(model.ErrorTransient), string(model.ErrorAuth),
	string(model.ErrorBadRequest), string(model.ErrorCanceled), string(model.ErrorMalformed)}

// breakerValues maps breaker states to patrold_model_circuit_state.
var breakerValues = map[model.BreakerState]float64{model.BreakerClosed: 0, model.BreakerHalfOpen: 1, model.BreakerOpen: 2}

type metrics struct {
	requests *prometheus.CounterVec
	tokens   *prometheus.CounterVec
	duration prometheus.Observer
	circuit  prometheus.Gauge
}

// newMetrics registers the model metrics (once per process: the model
// section takes a restart) and returns them curried to provider, with every label combination created.
func newMetrics(reg prometheus.Registerer, provider string) (*metrics, error) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "patrold_model_requests_total", Help: "Model calls by provider and outcome.",
	}, []string{"provider", "outcome"})
	tokens := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "patrold_model_tokens_total", Help: "Tokens reported by the provider, by direction.",
	}, []string{"provider", "direction"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "patrold_model_request_duration_seconds", Help: "Latency of model calls, retries included.",
		Buckets: []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120},
	}, []string{"provider"})
	circuit := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "patrold_model_circuit_state", Help: "Circuit breaker state: 0 closed, 1 half open, 2 open.",
	}, []string{"provider"})
	if reg != nil {
		for _, c := range []prometheus.Collector{requests, tokens, duration, circuit} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register metrics: %w", err)
			}
		}
	}
	m := &metrics{
		requests: requests.MustCurryWith(prometheus.Labels{"provider": provider}),
		tokens:   tokens.MustCurryWith(prometheus.Labels{"provider": provider}),
		duration: duration.WithLabelValues(provider),
		circuit:  circuit.WithLabelValues(provider),
	}
	for _, o := range outcomes {
		m.requests.WithLabelValues(o)
	}
	m.tokens.WithLabelValues(directionInput)
	m.tokens.WithLabelValues(directionOutput)
	m.circuit.Set(0)
	return m, nil
}

func (m *metrics) breakerState(_, to model.BreakerState) { m.circuit.Set(breakerValues[to]) }
