package prometheus

import (
	"strings"

	"github.com/prometheus/common/model"

	"github.com/patrold/patrold/snapshot"
)

// QueryOff disables a query: set a query to "off" when its exporter does not
// exist in your setup. An empty query means the default.
const QueryOff = "off"

// Placeholders substituted into every query before it is sent.
const (
	PlaceholderWindow     = "$window"      // Options.Window, e.g. 15m: the _avg values
	PlaceholderRateWindow = "$rate_window" // Options.RateWindow, e.g. 1m: rate() of the current value
)

// Queries maps each snapshot field to a PromQL instant query (YAML section
// source.prometheus.queries). Empty means the default below; QueryOff
// disables the query. Every series returned must carry the labels that
// identify its resource (see Labels).
type Queries struct {
	NodeUp                   string `koanf:"node_up" yaml:"node_up" json:"node_up"`
	NodeCPU                  string `koanf:"node_cpu" yaml:"node_cpu" json:"node_cpu"`
	NodeCPUAvg               string `koanf:"node_cpu_avg" yaml:"node_cpu_avg" json:"node_cpu_avg"`
	NodeMemory               string `koanf:"node_memory" yaml:"node_memory" json:"node_memory"`
	NodeMemoryAvg            string `koanf:"node_memory_avg" yaml:"node_memory_avg" json:"node_memory_avg"`
	NodeSwap                 string `koanf:"node_swap" yaml:"node_swap" json:"node_swap"`
	NodeIOWait               string `koanf:"node_iowait" yaml:"node_iowait" json:"node_iowait"`
	NodeIOWaitAvg            string `koanf:"node_iowait_avg" yaml:"node_iowait_avg" json:"node_iowait_avg"`
	StorageUsage             string `koanf:"storage_usage" yaml:"storage_usage" json:"storage_usage"`
	DiskHealth               string `koanf:"disk_health" yaml:"disk_health" json:"disk_health"`
	DiskReallocated          string `koanf:"disk_reallocated" yaml:"disk_reallocated" json:"disk_reallocated"`
	DiskPending              string `koanf:"disk_pending" yaml:"disk_pending" json:"disk_pending"`
	DiskOfflineUncorrectable string `koanf:"disk_offline_uncorrectable" yaml:"disk_offline_uncorrectable" json:"disk_offline_uncorrectable"`
	DiskUDMACRC              string `koanf:"disk_udma_crc" yaml:"disk_udma_crc" json:"disk_udma_crc"`
	DiskMediaErrors          string `koanf:"disk_media_errors" yaml:"disk_media_errors" json:"disk_media_errors"`
	DiskWearout              string `koanf:"disk_wearout" yaml:"disk_wearout" json:"disk_wearout"`
	DiskTemperature          string `koanf:"disk_temperature" yaml:"disk_temperature" json:"disk_temperature"`
	BackupLastSuccess        string `koanf:"backup_last_success" yaml:"backup_last_success" json:"backup_last_success"`
	BackupLastFinished       string `koanf:"backup_last_finished" yaml:"backup_last_finished" json:"backup_last_finished"`
	BackupLastStatus         string `koanf:"backup_last_status" yaml:"backup_last_status" json:"backup_last_status"`
}

// Filesystem types that are not storage worth patrolling.
const pseudoFS = `tmpfs|devtmpfs|ramfs|overlay|squashfs|nsfs|fuse\\.lxcfs|autofs|rpc_pipefs|tracefs|cgroup2?|proc|sysfs|iso9660`

func smartAttr(name string) string {
	return `smartctl_device_attribute{attribute_name="` + name + `",attribute_value_type="raw"}`
}

// DefaultQueries work with node_exporter, smartctl_exporter and a backup
// exporter following the convention in docs/SOURCES.md.
func DefaultQueries() Queries {
	return Queries{
		NodeUp:        `up{job="node"}`,
		NodeCPU:       `100 * (1 - avg without (cpu, mode) (rate(node_cpu_seconds_total{mode="idle"}[$rate_window])))`,
		NodeCPUAvg:    `100 * (1 - avg without (cpu, mode) (rate(node_cpu_seconds_total{mode="idle"}[$window])))`,
		NodeMemory:    `100 * (1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes)`,
		NodeMemoryAvg: `100 * (1 - avg_over_time(node_memory_MemAvailable_bytes[$window]) / avg_over_time(node_memory_MemTotal_bytes[$window]))`,
		// A node without swap has no series: 0/0 would be NaN.
		NodeSwap:                 `100 * (1 - node_memory_SwapFree_bytes / (node_memory_SwapTotal_bytes > 0))`,
		NodeIOWait:               `100 * avg without (cpu, mode) (rate(node_cpu_seconds_total{mode="iowait"}[$rate_window]))`,
		NodeIOWaitAvg:            `100 * avg without (cpu, mode) (rate(node_cpu_seconds_total{mode="iowait"}[$window]))`,
		StorageUsage:             `100 * (1 - node_filesystem_avail_bytes{fstype!~"` + pseudoFS + `"} / node_filesystem_size_bytes{fstype!~"` + pseudoFS + `"})`,
		DiskHealth:               `smartctl_device_smart_status`,
		DiskReallocated:          smartAttr("Reallocated_Sector_Ct"),
		DiskPending:              smartAttr("Current_Pending_Sector"),
		DiskOfflineUncorrectable: smartAttr("Offline_Uncorrectable"),
		DiskUDMACRC:              smartAttr("UDMA_CRC_Error_Count"),
		DiskMediaErrors:          `smartctl_device_media_errors`,
		DiskWearout:              `100 - smartctl_device_percentage_used`,
		DiskTemperature:          `smartctl_device_temperature{temperature_type="current"}`,
		BackupLastSuccess:        `backup_last_success_timestamp_seconds`,
		BackupLastFinished:       `backup_last_finished_timestamp_seconds`,
		BackupLastStatus:         `backup_last_status == 1`,
	}
}

// family groups the queries that together describe one kind of resource.
// When one query of a family fails, every resource of the family is left out
// of the snapshot: a half-filled resource (say a disk whose pending-sector
// query failed) would read as healthy and clear a real finding.
type family string

const (
	familyNode    family = "node"
	familyStorage family = "storage"
	familyDisk    family = "disk"
	familyBackup  family = "backup"
)

// querySpec is one row of the query table.
type querySpec struct {
	name   string // the koanf key, also the metric label and problem field
	family family
	get    func(*Queries) *string
	apply  func(b *builder, s *model.Sample) bool // false: sample not attributable
}

// specs is the query table, in the order results are applied.
var specs = []querySpec{
	{"node_up", familyNode, func(q *Queries) *string { return &q.NodeUp }, (*builder).nodeUp},
	{"node_cpu", familyNode, func(q *Queries) *string { return &q.NodeCPU }, nodeMetric("cpu_percent")},
	{"node_cpu_avg", familyNode, func(q *Queries) *string { return &q.NodeCPUAvg }, nodeMetric("cpu_percent_avg")},
	{"node_memory", familyNode, func(q *Queries) *string { return &q.NodeMemory }, nodeMetric("memory_percent")},
	{"node_memory_avg", familyNode, func(q *Queries) *string { return &q.NodeMemoryAvg }, nodeMetric("memory_percent_avg")},
	{"node_swap", familyNode, func(q *Queries) *string { return &q.NodeSwap }, nodeMetric(snapshot.MetricSwap)},
	{"node_iowait", familyNode, func(q *Queries) *string { return &q.NodeIOWait }, nodeMetric(snapshot.MetricIOWait)},
	{"node_iowait_avg", familyNode, func(q *Queries) *string { return &q.NodeIOWaitAvg }, nodeMetric(snapshot.MetricIOWait + "_avg")},
	{"storage_usage", familyStorage, func(q *Queries) *string { return &q.StorageUsage }, (*builder).storageUsage},
	{"disk_health", familyDisk, func(q *Queries) *string { return &q.DiskHealth }, (*builder).diskHealth},
	{"disk_reallocated", familyDisk, func(q *Queries) *string { return &q.DiskReallocated }, diskCount(func(s *snapshot.Smart) *int64 { return &s.ReallocatedSectors })},
	{"disk_pending", familyDisk, func(q *Queries) *string { return &q.DiskPending }, diskCount(func(s *snapshot.Smart) *int64 { return &s.PendingSectors })},
	{"disk_offline_uncorrectable", familyDisk, func(q *Queries) *string { return &q.DiskOfflineUncorrectable }, diskCount(func(s *snapshot.Smart) *int64 { return &s.OfflineUncorrectable })},
	{"disk_udma_crc", familyDisk, func(q *Queries) *string { return &q.DiskUDMACRC }, diskCount(func(s *snapshot.Smart) *int64 { return &s.UDMACRCErrors })},
	{"disk_media_errors", familyDisk, func(q *Queries) *string { return &q.DiskMediaErrors }, diskCount(func(s *snapshot.Smart) *int64 { return &s.MediaErrors })},
	{"disk_wearout", familyDisk, func(q *Queries) *string { return &q.DiskWearout }, (*builder).diskWearout},
	{"disk_temperature", familyDisk, func(q *Queries) *string { return &q.DiskTemperature }, (*builder).diskTemperature},
	{"backup_last_success", familyBackup, func(q *Queries) *string { return &q.BackupLastSuccess }, (*builder).backupLastSuccess},
	{"backup_last_finished", familyBackup, func(q *Queries) *string { return &q.BackupLastFinished }, (*builder).backupLastFinished},
	{"backup_last_status", familyBackup, func(q *Queries) *string { return &q.BackupLastStatus }, (*builder).backupLastStatus},
}

// QueryNames lists every query name (the keys of Queries) in table order.
func QueryNames() []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.name
	}
	return out
}

// withDefaults fills empty queries from DefaultQueries.
func (q Queries) withDefaults() Queries {
	def := DefaultQueries()
	for _, s := range specs {
		if p := s.get(&q); strings.TrimSpace(*p) == "" {
			*p = *s.get(&def)
		}
	}
	return q
}

// expand substitutes the window placeholders.
func expand(q string, window, rateWindow model.Duration) string {
	q = strings.ReplaceAll(q, PlaceholderRateWindow, rateWindow.String())
	return strings.ReplaceAll(q, PlaceholderWindow, window.String())
}
