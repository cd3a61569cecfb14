package assistant

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/contracts"
)

// Action results (metric label values).
const (
	actionOK       = "ok"
	actionFailed   = "failed"
	actionTimedOut = "timed_out"
)

// metrics are the assistant's Prometheus metrics. Labels come from closed
// sets (driver, outcome, approval event, action result), every combination
// pre-created.
type metrics struct {
	sessions  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	actions   *prometheus.CounterVec
	approvals *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		sessions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "patrold_assistant_sessions_total",
			Help: "Remediation sessions ended, by driver and outcome.",
		}, []string{"driver", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "patrold_assistant_session_duration_seconds",
			Help:    "Wall time of remediation sessions (a resumed session counts from its first start).",
			Buckets: []float64{0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600},
		}, []string{"driver"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "patrold_assistant_actions_total",
			Help: "Declared actions executed, by result.",
		}, []string{"result"}),
		approvals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "patrold_assistant_approval_events_total",
			Help: "Approval lifecycle events, by event.",
		}, []string{"event"}),
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.sessions, m.duration, m.actions, m.approvals} {
		errs = append(errs, reg.Register(c))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, d := range []contracts.Driver{contracts.DriverModel, contracts.DriverPlaybook} {
		m.duration.WithLabelValues(string(d))
		for _, o := range contracts.Outcomes {
			m.sessions.WithLabelValues(string(d), string(o))
		}
	}
	for _, r := range []string{actionOK, actionFailed, actionTimedOut} {
		m.actions.WithLabelValues(r)
	}
	for _, e := range contracts.ApprovalEvents {
		m.approvals.WithLabelValues(string(e))
	}
	return m, nil
}

func (m *metrics) session(r *Result) {
	d := string(r.Transcript.Driver)
	m.sessions.WithLabelValues(d, string(r.Transcript.Outcome)).Inc()
	m.duration.WithLabelValues(d).Observe(r.FinishedAt.Sub(r.StartedAt).Seconds())
}

func (m *metrics) action(r ExecResult) {
	switch {
	case r.TimedOut:
		m.actions.WithLabelValues(actionTimedOut).Inc()
	case r.OK():
		m.actions.WithLabelValues(actionOK).Inc()
	default:
		m.actions.WithLabelValues(actionFailed).Inc()
	}
}

func (m *metrics) approval(e contracts.ApprovalEvent) { m.approvals.WithLabelValues(string(e)).Inc() }
