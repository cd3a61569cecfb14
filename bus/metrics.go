package bus

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Subject kinds for patrold_bus_malformed_messages_total (a closed set).
const (
	KindRemediationRequest = "remediation_request"
	KindRemediationOutcome = "remediation_outcome"
)

type relayMetrics struct {
	pending   prometheus.Gauge
	published prometheus.Counter
	failures  prometheus.Counter
	// republished counts state changes published again (Relay.Resend).
	republished prometheus.Counter
}

func newRelayMetrics(reg prometheus.Registerer) (relayMetrics, error) {
	m := relayMetrics{
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "patrold_outbox_pending",
			Help: "Outbox rows not yet acknowledged by JetStream, as of the last relay pass.",
		}),
		published: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "patrold_outbox_published_total",
			Help: "Outbox rows published, acknowledged and marked sent.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "patrold_outbox_publish_failures_total",
			Help: "Outbox rows whose publish attempt failed and will be retried.",
		}),
		republished: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "patrold_outbox_republished_total",
			Help: "State changes the stream had acknowledged, then lost, published again by the writer from its outbox.",
		}),
	}
	return m, register(reg, m.pending, m.published, m.failures, m.republished)
}

type transportMetrics struct {
	malformed *prometheus.CounterVec
	handled   *prometheus.CounterVec
}

func newTransportMetrics(reg prometheus.Registerer) (transportMetrics, error) {
	m := transportMetrics{
		malformed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "patrold_bus_malformed_messages_total",
			Help: "Messages terminated because they could not be decoded or validated.",
		}, []string{"subject_kind"}),
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "patrold_bus_handled_messages_total",
			Help: "Messages passed to a handler, by result (ack, or retry after an error).",
		}, []string{"subject_kind", "result"}),
	}
	for _, k := range []string{KindRemediationRequest, KindRemediationOutcome} {
		m.malformed.WithLabelValues(k)
		m.handled.WithLabelValues(k, "ack")
		m.handled.WithLabelValues(k, "retry")
	}
	return m, register(reg, m.malformed, m.handled)
}

type connMetrics struct {
	connected  prometheus.Gauge
	reconnects prometheus.Counter
}

func newConnMetrics(reg prometheus.Registerer) (connMetrics, error) {
	m := connMetrics{
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "patrold_bus_connected",
			Help: "1 while the NATS connection is up.",
		}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "patrold_bus_reconnects_total",
			Help: "NATS reconnections.",
		}),
	}
	return m, register(reg, m.connected, m.reconnects)
}

func register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register metrics: %w", err)
		}
	}
	return nil
}
