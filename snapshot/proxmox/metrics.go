package proxmox

import (
	"errors"

	promclient "github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/internal/promreg"
)

// Endpoint families, the values of the endpoint label.
var endpointFamilies = []string{"cluster_resources", "cluster_backup", "storage_config", "disks_list", "disks_smart",
	"disks_zfs", "disks_zfs_pool", "tasks", "task_log", "storage_content", "guest_config", "guest_agent"}

// Request outcomes, the values of the outcome label.
const (
	outcomeOK          = "ok"
	outcomeError       = "error"       // an error answer or one that did not decode
	outcomeUnreachable = "unreachable" // no answer: timeout, transport, 595/596
)

// metrics of the Proxmox source; every label combination is pre-created.
type metrics struct {
	requests *promclient.CounterVec
	duration *promclient.HistogramVec
}

func newMetrics(reg promclient.Registerer) (*metrics, error) {
	m := &metrics{
		requests: promclient.NewCounterVec(promclient.CounterOpts{
			Name: "patrold_source_proxmox_requests_total",
			Help: "Proxmox VE API requests of the proxmox snapshot source by endpoint family and outcome.",
		}, []string{"endpoint", "outcome"}),
		duration: promclient.NewHistogramVec(promclient.HistogramOpts{
			Name:    "patrold_source_proxmox_request_duration_seconds",
			Help:    "Duration of one Proxmox VE API request of the proxmox snapshot source.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"endpoint"}),
	}
	for _, e := range endpointFamilies {
		m.duration.WithLabelValues(e)
		for _, o := range []string{outcomeOK, outcomeError, outcomeUnreachable} {
			m.requests.WithLabelValues(e, o)
		}
	}
	if err := promreg.Register(reg, m.requests, m.duration); err != nil {
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

func (m *metrics) observe(segments []string, seconds float64, err error) {
	family := endpointFamily(segments)
	outcome := outcomeOK
	switch {
	case errors.Is(err, ErrNodeUnreachable):
		outcome = outcomeUnreachable
	case err != nil:
		outcome = outcomeError
	}
	m.requests.WithLabelValues(family, outcome).Inc()
	m.duration.WithLabelValues(family).Observe(seconds)
}

// endpointFamily names the endpoint of a request without its node, guest
// or storage, so the label set stays closed.
func endpointFamily(s []string) string {
	switch {
	case len(s) == 2 && s[0] == "cluster" && s[1] == "resources":
		return "cluster_resources"
	case len(s) == 2 && s[0] == "cluster" && s[1] == "backup":
		return "cluster_backup"
	case len(s) == 1 && s[0] == "storage":
		return "storage_config"
	case len(s) == 4 && s[2] == "disks" && s[3] == "list":
		return "disks_list"
	case len(s) == 4 && s[2] == "disks" && s[3] == "smart":
		return "disks_smart"
	case len(s) == 4 && s[2] == "disks" && s[3] == "zfs":
		return "disks_zfs"
	case len(s) == 5 && s[2] == "disks" && s[3] == "zfs":
		return "disks_zfs_pool"
	case len(s) == 3 && s[2] == "tasks":
		return "tasks"
	case len(s) == 5 && s[2] == "tasks" && s[4] == "log":
		return "task_log"
	case len(s) == 5 && s[2] == "storage" && s[4] == "content":
		return "storage_content"
	case len(s) == 5 && (s[2] == "qemu" || s[2] == "lxc") && s[4] == "config":
		return "guest_config"
	}
	return "guest_agent"
}
