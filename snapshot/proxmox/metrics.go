package proxmox

import (
	"errors"

	promclient "github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/internal/promreg"
)

// Endpoint families, the values of the endpoint label: the PVE API's and
// the PBS API's.
var (
	endpointFamilies = []string{"cluster_resources", "cluster_status", "cluster_ha_status", "cluster_backup", "cluster_not_backed_up", "storage_config", "node_status", "replication", "certificates", "apt_update", "disks_list", "disks_smart",
		"disks_zfs", "disks_zfs_pool", "tasks", "task_log", "storage_content", "guest_config", "guest_snapshots", "guest_agent"}
	pbsEndpointFamilies = []string{"datastore_usage", "verify_jobs", "prune_jobs", "sync_jobs", "gc_jobs", "snapshots"}
)

// pveEndpoint is one family of PVE API requests: its path, the PVE
// privilege the token needs for it (docs/SOURCES.md#endpoints-and-privileges),
// the signal keys that rest on it, and what it reads, in words.
type pveEndpoint struct {
	family, path, privilege string
	keys                    []string
	what                    string
}

// pveEndpoints are the PVE requests of the source, in endpointFamilies order.
var pveEndpoints = []pveEndpoint{
	{"cluster_resources", "/cluster/resources", "VM.Audit, Sys.Audit, Datastore.Audit (each entry by its own)", nil, "resources"},
	{"cluster_status", "/cluster/status", "Sys.Audit", []string{"quorum_lost"}, "cluster status"},
	{"cluster_ha_status", "/cluster/ha/status/current", "Sys.Audit", []string{"ha_error", "guest_down"}, "HA status"},
	{"cluster_backup", "/cluster/backup", "Sys.Audit", []string{"backup_failed", "backup_stale", "backup_unscheduled"}, "backup jobs"},
	{"cluster_not_backed_up", "/cluster/backup-info/not-backed-up", "Sys.Audit", []string{"backup_unscheduled"}, "guests in no backup job"},
	{"storage_config", "/storage", "Datastore.Audit", []string{"high_disk"}, "storage paths"},
	{"node_status", "/nodes/{node}/status", "Sys.Audit", []string{"high_swap", "high_iowait"}, "status"},
	{"replication", "/nodes/{node}/replication", "VM.Audit (each guest's jobs by its own)", []string{"replication_failed"}, "replication"},
	{"certificates", "/nodes/{node}/certificates/info", "Sys.Audit", []string{"certificate_expiring"}, "certificates"},
	{"apt_update", "/nodes/{node}/apt/update", "Sys.Modify", []string{"updates_pending"}, "updates"},
	{"disks_list", "/nodes/{node}/disks/list", "Sys.Audit", []string{"smart_failure", "disk_temperature", "disk_wear"}, "disks"},
	{"disks_smart", "/nodes/{node}/disks/smart", "Sys.Audit", []string{"smart_failure", "disk_temperature", "disk_wear"}, "SMART"},
	{"disks_zfs", "/nodes/{node}/disks/zfs", "Sys.Audit", []string{"zfs_pool_degraded", "zfs_scrub_overdue"}, "ZFS pools"},
	{"disks_zfs_pool", "/nodes/{node}/disks/zfs/{pool}", "Sys.Audit", []string{"zfs_pool_degraded", "zfs_scrub_overdue"}, "ZFS pool status"},
	{"tasks", "/nodes/{node}/tasks", "Sys.Audit", []string{"backup_failed", "backup_stale", "guest_down", "lock_stuck"}, "tasks"},
	{"task_log", "/nodes/{node}/tasks/{upid}/log", "Sys.Audit", []string{"backup_failed"}, "task logs"},
	{"storage_content", "/nodes/{node}/storage/{storage}/content", "Datastore.Audit", []string{"backup_failed", "backup_stale"}, "backup volumes"},
	{"guest_config", "/nodes/{node}/{qemu,lxc}/{vmid}/config", "VM.Audit", []string{"guest_down"}, "guest configs"},
	{"guest_snapshots", "/nodes/{node}/{qemu,lxc}/{vmid}/snapshot", "VM.Audit", []string{"snapshot_old"}, "snapshots"},
	{"guest_agent", "/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces", "VM.Monitor (PVE 9: VM.GuestAgent.Audit)", []string{"guest_unreachable"}, "guest addresses"},
}

// endpointOfFamily is the row of a family; ok is false for none.
func endpointOfFamily(family string) (pveEndpoint, bool) {
	for _, e := range pveEndpoints {
		if e.family == family {
			return e, true
		}
	}
	return pveEndpoint{}, false
}

// api is what one set of collectors counts: the metric names' source
// word, the help text's server, the endpoint families and the mapping of
// a request onto one.
type api struct {
	name, server string
	families     []string
	family       func(segments []string) string
}

var (
	pveAPI = api{"proxmox", "Proxmox VE API", endpointFamilies, endpointFamily}
	pbsAPI = api{"pbs", "Proxmox Backup Server API", pbsEndpointFamilies, pbsEndpointFamily}
)

// Request outcomes, the values of the outcome label.
const (
	outcomeOK          = "ok"
	outcomeError       = "error"       // an error answer or one that did not decode
	outcomeUnreachable = "unreachable" // no answer: timeout, transport, 595/596
)

// metrics of the Proxmox or PBS source; every label combination is
// pre-created.
type metrics struct {
	api      api
	requests *promclient.CounterVec
	duration *promclient.HistogramVec
}

func newMetrics(reg promclient.Registerer, a api) (*metrics, error) {
	m := &metrics{
		api: a,
		requests: promclient.NewCounterVec(promclient.CounterOpts{
			Name: "patrold_source_" + a.name + "_requests_total",
			Help: a.server + " requests of the " + a.name + " snapshot source by endpoint family and outcome.",
		}, []string{"endpoint", "outcome"}),
		duration: promclient.NewHistogramVec(promclient.HistogramOpts{
			Name:    "patrold_source_" + a.name + "_request_duration_seconds",
			Help:    "Duration of one " + a.server + " request of the " + a.name + " snapshot source.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"endpoint"}),
	}
	for _, e := range a.families {
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
	m, err := newMetrics(reg, pveAPI)
	if err != nil {
		return nil, err
	}
	return &Metrics{m: m}, nil
}

// PBSMetrics are the PBS source's collectors
// (patrold_source_pbs_requests_total and
// patrold_source_pbs_request_duration_seconds), shared like Metrics by
// every PBS source built on one registry.
type PBSMetrics struct{ m *metrics }

// NewPBSMetrics builds the PBS collectors and registers them on reg (nil:
// unregistered); a second registration on the same registry is an error.
func NewPBSMetrics(reg promclient.Registerer) (*PBSMetrics, error) {
	m, err := newMetrics(reg, pbsAPI)
	if err != nil {
		return nil, err
	}
	return &PBSMetrics{m: m}, nil
}

func (m *metrics) observe(segments []string, seconds float64, err error) {
	family := m.api.family(segments)
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
	case len(s) == 2 && s[0] == "cluster" && s[1] == "status":
		return "cluster_status"
	case len(s) == 4 && s[0] == "cluster" && s[1] == "ha" && s[2] == "status":
		return "cluster_ha_status"
	case len(s) == 2 && s[0] == "cluster" && s[1] == "backup":
		return "cluster_backup"
	case len(s) == 3 && s[0] == "cluster" && s[1] == "backup-info" && s[2] == "not-backed-up":
		return "cluster_not_backed_up"
	case len(s) == 1 && s[0] == "storage":
		return "storage_config"
	case len(s) == 3 && s[0] == "nodes" && s[2] == "status":
		return "node_status"
	case len(s) == 3 && s[0] == "nodes" && s[2] == "replication":
		return "replication"
	case len(s) == 4 && s[0] == "nodes" && s[2] == "certificates" && s[3] == "info":
		return "certificates"
	case len(s) == 4 && s[0] == "nodes" && s[2] == "apt" && s[3] == "update":
		return "apt_update"
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
	case len(s) == 5 && (s[2] == "qemu" || s[2] == "lxc") && s[4] == "snapshot":
		return "guest_snapshots"
	}
	return "guest_agent"
}

// pbsEndpointFamily names a PBS request without its datastore.
func pbsEndpointFamily(s []string) string {
	switch {
	case len(s) == 2 && s[0] == "status" && s[1] == "datastore-usage":
		return "datastore_usage"
	case len(s) == 2 && s[0] == "admin" && (s[1] == "verify" || s[1] == "prune" || s[1] == "sync" || s[1] == "gc"):
		return s[1] + "_jobs"
	}
	return "snapshots"
}
