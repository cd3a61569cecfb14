package api

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// routeUnmatched labels requests no route matched (404 and 405).
const routeUnmatched = "unmatched"

// statusCodes is the closed set of status labels; anything else is "other".
var statusCodes = []int{200, 202, 400, 401, 403, 404, 405, 409, 413, 500, 503}

// metrics are the API metrics, registered on the injected Registerer.
type metrics struct {
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	auditFailures prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, routes []string) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "patrold_api_requests_total",
			Help: "API requests by route and HTTP status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "patrold_api_request_duration_seconds",
			Help:    "API request latency by route.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5},
		}, []string{"route"}),
		auditFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "patrold_api_audit_write_failures_total",
			Help: "Audit events that could not be written to the database (they are still logged).",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.auditFailures} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, r := range append(routes, routeUnmatched) {
		m.duration.WithLabelValues(r)
		for _, c := range statusCodes {
			m.requests.WithLabelValues(r, strconv.Itoa(c))
		}
		m.requests.WithLabelValues(r, "other")
	}
	return m, nil
}

func statusLabel(code int) string {
	for _, c := range statusCodes {
		if c == code {
			return strconv.Itoa(code)
		}
	}
	return "other"
}

func (m *metrics) observe(route string, code int, took time.Duration) {
	m.requests.WithLabelValues(route, statusLabel(code)).Inc()
	m.duration.WithLabelValues(route).Observe(took.Seconds())
}
