package notify

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the per-sink delivery metrics; the sink label takes the
// configured sink names (a closed set), pre-created at start.
type metrics struct {
	sent        *prometheus.CounterVec
	failed      *prometheus.CounterVec
	deadLetters *prometheus.CounterVec
	lag         *prometheus.GaugeVec
	active      *prometheus.GaugeVec
	resends     *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, sinks []SinkOptions) (*metrics, error) {
	m := &metrics{
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "patrold_notify_sent_total",
			Help: "Events a sink accepted (acknowledged on its consumer)."}, []string{"sink"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "patrold_notify_failed_total",
			Help: "Delivery attempts that failed; the event is redelivered with backoff or dead-lettered."}, []string{"sink"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "patrold_notify_dead_letters_total",
			Help: "Events given up after max_deliver failed deliveries, or that do not decode."}, []string{"sink"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "patrold_notify_lag_messages",
			Help: "Events on the stream the sink has not acknowledged yet (pending plus in delivery)."}, []string{"sink"}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "patrold_notify_active_alerts",
			Help: "Active alerts an alertmanager sink re-posts every resend_interval."}, []string{"sink"}),
		resends: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "patrold_notify_resends_total",
			Help: "Re-posts of the active alerts to one Alertmanager, by result (ok or error)."}, []string{"sink", "result"}),
	}
	for _, s := range sinks {
		m.sent.WithLabelValues(s.Name)
		m.failed.WithLabelValues(s.Name)
		m.deadLetters.WithLabelValues(s.Name)
		m.lag.WithLabelValues(s.Name)
		if s.Kind == KindAlertmanager {
			m.active.WithLabelValues(s.Name)
			m.resends.WithLabelValues(s.Name, "ok")
			m.resends.WithLabelValues(s.Name, "error")
		}
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.sent, m.failed, m.deadLetters, m.lag, m.active, m.resends} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register notify metrics: %w", err)
		}
	}
	return m, nil
}
