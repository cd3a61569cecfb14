package probe

import (
	promclient "github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/internal/metricsreg"
)

// metrics of the prober; every label value is pre-created.
type metrics struct {
	addresses *promclient.CounterVec
	guests    *promclient.CounterVec
}

// Guest verdict label values.
const (
	verdictReachable   = "reachable"
	verdictUnreachable = "unreachable"
	verdictUnknown     = "unknown"
)

func newMetrics(reg promclient.Registerer) (*metrics, error) {
	m := &metrics{
		addresses: promclient.NewCounterVec(promclient.CounterOpts{
			Name: "patrold_probe_addresses_total",
			Help: "Guest addresses probed by TCP connect, by outcome.",
		}, []string{"outcome"}),
		guests: promclient.NewCounterVec(promclient.CounterOpts{
			Name: "patrold_probe_guests_total",
			Help: "Guests whose reachability the prober decided, by verdict.",
		}, []string{"verdict"}),
	}
	for _, o := range Outcomes {
		m.addresses.WithLabelValues(string(o))
	}
	for _, v := range []string{verdictReachable, verdictUnreachable, verdictUnknown} {
		m.guests.WithLabelValues(v)
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.addresses, err = metricsreg.Register(reg, m.addresses); err != nil {
		return nil, err
	}
	if m.guests, err = metricsreg.Register(reg, m.guests); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) address(o Outcome) { m.addresses.WithLabelValues(string(o)).Inc() }

func (m *metrics) guest(reachable *bool) {
	v := verdictUnknown
	if reachable != nil && *reachable {
		v = verdictReachable
	} else if reachable != nil {
		v = verdictUnreachable
	}
	m.guests.WithLabelValues(v).Inc()
}
