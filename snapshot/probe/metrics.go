package probe

import (
	promclient "github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/internal/promreg"
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
	if err := promreg.Register(reg, m.addresses, m.guests); err != nil {
		return nil, err
	}
	return m, nil
}

// Metrics are the prober's collectors. Build them once per registry with
// NewMetrics and pass them in Options.Metrics to every prober built on that
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
