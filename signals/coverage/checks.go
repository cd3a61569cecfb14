package coverage

import (
	"fmt"

	"github.com/patrold/patrold/alerts"
)

// Source kinds, as source.kind spells them.
const (
	proxmox    = "proxmox"
	pbs        = "pbs"
	prometheus = "prometheus"
	demo       = "demo"
)

// checks is the union list. Anchor rules are facts about those rule sets
// as shipped; patrold's side comes from the code's own defaults.
var checks = []Check{
	{
		Name:    "node down",
		Rules:   []Rule{{APAPVE, "pve_up of a node is 0 for 2m: critical"}, {Checkmk, "node status not online: critical"}},
		Key:     "node_offline",
		Patrold: fixed("status offline or unknown: critical"),
		Data:    "node status", Reads: []string{proxmox, prometheus, demo},
	},
	{
		Name:    "cluster quorum",
		Rules:   []Rule{{APAPVE, "pve_cluster_info quorate 0: critical"}, {Zabbix, "cluster not quorate: high"}, {PulseRequests, "#428, #1085"}},
		Key:     "quorum_lost",
		Patrold: fixed("quorate false: critical; holds node and guest findings"),
		Data:    "cluster quorum (/cluster/status)", Reads: []string{proxmox},
	},
	{
		Name:    "guest that should run is stopped",
		Rules:   []Rule{{APAPVE, "pve_up of a guest is 0 for 5m: warning (every stopped guest)"}, {Zabbix, "VM or container not running: average"}, {PulseRequests, "#431; stopped on purpose: #237, #397"}},
		Key:     "guest_down",
		Patrold: fixed("stopped with onboot or HA started, no user stop since its start: warning, critical when HA-managed"),
		Data:    "guest configs and tasks", Reads: []string{proxmox},
	},
	{
		Name:    "node CPU",
		Rules:   []Rule{{APAPVE, "CPU above 90 % for 5m: warning"}, {Zabbix, "CPU above 90 % for 5m: warning"}, {APANode, "CPU busy above 80 % for 10m: warning"}},
		Key:     "high_cpu",
		Patrold: func() string { return "sustained CPU above " + pct(alerts.DefaultNodeCPU) + ": warning" },
		Data:    "node CPU", Reads: []string{proxmox, prometheus, demo},
	},
	{
		Name:    "node memory",
		Rules:   []Rule{{APAPVE, "memory above 90 % for 5m: warning"}, {Zabbix, "memory above 90 % for 5m: warning"}, {APANode, "less than 10 % available for 2m: warning"}},
		Key:     "high_memory",
		Patrold: func() string { return "sustained memory above " + pct(alerts.DefaultNodeMemory) + ": warning" },
		Data:    "node memory", Reads: []string{proxmox, prometheus, demo},
	},
	{
		Name:    "guest CPU",
		Rules:   []Rule{{APAPVE, "CPU above 90 % for 5m: warning"}, {Zabbix, "VM or container CPU above 90 %: warning"}},
		Key:     "high_cpu",
		Patrold: func() string { return "sustained CPU above " + pct(alerts.DefaultGuestCPU) + ": warning" },
		Data:    "guest CPU", Reads: []string{proxmox, demo},
	},
	{
		Name:    "guest memory",
		Rules:   []Rule{{APAPVE, "memory above 90 % for 5m: warning"}, {Zabbix, "VM or container memory above 90 %: warning"}},
		Key:     "high_memory",
		Patrold: func() string { return "sustained memory above " + pct(alerts.DefaultGuestMemory) + ": warning" },
		Data:    "guest memory", Reads: []string{proxmox, demo},
	},
	{
		Name:  "storage usage",
		Rules: []Rule{{APAPVE, "above 80 % for 5m: warning; above 95 % for 2m: critical"}, {Zabbix, "storage above 90 %: warning"}, {APANode, "less than 10 % left for 2m: warning"}, {APAZFS, "less than 10 % free: warning"}},
		Key:   "high_disk",
		Patrold: func() string {
			return fmt.Sprintf("above %s: warning; above %s: critical", pct(alerts.DefaultStorageUsage), pct(alerts.DefaultStorageCrit))
		},
		Data: "storage usage", Reads: []string{proxmox, prometheus, demo},
	},
	{
		Name:  "container disk",
		Rules: []Rule{{Zabbix, "container disk above 90 %: warning"}},
		Key:   "high_disk",
		Patrold: func() string {
			return fmt.Sprintf("above %s: warning; above %s: critical", pct(alerts.DefaultGuestDisk), pct(alerts.DefaultGuestDiskCrit))
		},
		Data: "guest disk usage", Reads: []string{proxmox, demo},
	},
	{
		Name:  "node root filesystem",
		Rules: []Rule{{Zabbix, "root filesystem above 90 %: warning"}},
		Data:  "node root filesystem",
	},
	{
		Name:    "swap",
		Rules:   []Rule{{Zabbix, "swap above 90 %: warning"}, {APANode, "swap above 80 % for 2m: warning"}},
		Key:     "high_swap",
		Patrold: func() string { return "swap above " + pct(alerts.DefaultNodeSwap) + ": warning" },
		Data:    "node swap", Reads: []string{proxmox, prometheus},
	},
	{
		Name:    "IO wait",
		Rules:   []Rule{{APANode, "iowait above 10 % (5m average): warning"}},
		Key:     "high_iowait",
		Patrold: func() string { return "sustained IO wait above " + pct(alerts.DefaultNodeIOWait) + ": warning" },
		Data:    "node IO wait", Reads: []string{proxmox, prometheus},
	},
	{
		Name:  "filling up",
		Rules: []Rule{{APANode, "under 10 % left and full within 24h by a 1h linear trend: warning"}},
		Key:   "capacity_forecast",
		Patrold: func() string {
			return fmt.Sprintf("full within %g days by a 24h+ trend: watch; within %g days: warning", alerts.DefaultForecastDays, alerts.DefaultForecastDaysCrit)
		},
		Data: "usage history", Reads: []string{proxmox, prometheus, demo},
	},
	{
		Name:    "replication",
		Rules:   []Rule{{APAPVE, "failed syncs above 0: warning"}, {PulseRequests, "#395"}},
		Key:     "replication_failed",
		Patrold: fixed("fail_count 1: warning, 3: critical; last sync older than 3 intervals: warning"),
		Data:    "replication jobs", Reads: []string{proxmox},
	},
	{
		Name:    "HA resources",
		Rules:   []Rule{{Zabbix, "HA resource in error state: high"}},
		Key:     "ha_error",
		Patrold: fixed("service error or fence: critical; recovery or freeze: warning; LRM not active or idle: warning"),
		Data:    "HA status", Reads: []string{proxmox},
	},
	{
		Name:    "guests in no backup job",
		Rules:   []Rule{{APAPVE, "pve_not_backed_up_total above 0: warning"}, {PulseRequests, "#762"}},
		Key:     "backup_unscheduled",
		Patrold: fixed("in no enabled backup job (templates and guests tagged nobackup excluded): warning"),
		Data:    "backup jobs", Reads: []string{proxmox},
	},
	{
		Name:  "backup age",
		Rules: []Rule{{Checkmk, "age of the last backup, levels by rule (none by default)"}},
		Key:   "backup_stale",
		Patrold: func() string {
			return "no success within backup.max_age " + alerts.DefaultBackupMaxAge.String() + ": warning"
		},
		Data: "backup history", Reads: []string{proxmox, pbs, prometheus, demo},
	},
	{
		Name:    "backup failed",
		Rules:   []Rule{{Checkmk, "error of the last backup: critical"}},
		Key:     "backup_failed",
		Patrold: fixed("last backup failed within backup.max_age: warning"),
		Data:    "backup history", Reads: []string{proxmox, pbs, prometheus, demo},
	},
	{
		Name:    "backup verification",
		Rules:   []Rule{{PulseRequests, "PBS verify state"}},
		Key:     "backup_unverified",
		Patrold: fixed("newest backup's verification failed: warning; none verified in 7 days where verify jobs exist: watch"),
		Data:    "backup verification state", Reads: []string{proxmox, pbs},
	},
	{
		Name:  "backup datastore jobs",
		Rules: []Rule{{PulseRequests, "PBS job failures"}},
		Key:   "backup_job_failed",
		Patrold: func() string {
			return fmt.Sprintf("failing jobs and verifications at %g: warning; at %g: critical", alerts.DefaultBackupJobs, alerts.DefaultBackupJobsCrit)
		},
		Data: "backup datastore jobs", Reads: []string{pbs, demo},
	},
	{
		Name:    "old snapshots",
		Rules:   []Rule{{Checkmk, "oldest snapshot older than 1 day: warning; 2 days: critical"}},
		Key:     "snapshot_old",
		Patrold: fixed("oldest snapshot older than 30 days: warning"),
		Data:    "guest snapshots", Reads: []string{proxmox},
	},
	{
		Name:    "node certificate",
		Rules:   []Rule{{PulseRequests, "#1673"}},
		Key:     "certificate_expiring",
		Patrold: fixed("expires within 30 days: warning; within 7 days or expired: critical"),
		Data:    "node certificates", Reads: []string{proxmox},
	},
	{
		Name:    "pending updates",
		Rules:   []Rule{{PulseRequests, "#1083, #1802"}},
		Key:     "updates_pending",
		Patrold: fixed("updates pending: watch; over 30 days or a security origin: warning"),
		Data:    "apt updates", Reads: []string{proxmox},
	},
	{
		Name:    "SMART health",
		Rules:   []Rule{{APASmart, "critical warning above 0 for 15m: critical; media errors above 0 for 15m: critical"}},
		Key:     "smart_failure",
		Patrold: fixed("health failed, pending, uncorrectable or media errors, NVMe critical warning: critical; reallocated or CRC errors: warning"),
		Data:    "SMART data", Reads: []string{proxmox, prometheus, demo},
	},
	{
		Name:  "disk temperature",
		Rules: []Rule{{APASmart, "above 60 °C for 2m: warning; above 80 °C: critical"}},
		Key:   "disk_temperature",
		Patrold: func() string {
			return fmt.Sprintf("at %g °C: warning; at %g °C: critical", alerts.DefaultDiskTemperature, alerts.DefaultDiskTemperatureCrit)
		},
		Data: "disk temperature", Reads: []string{proxmox, prometheus, demo},
	},
	{
		Name:  "SSD wear",
		Rules: []Rule{{APASmart, "NVMe available spare under its threshold: critical"}},
		Key:   "disk_wear",
		Patrold: func() string {
			return fmt.Sprintf("life left at %g %%: warning; at %g %%: critical", alerts.DefaultDiskWear, alerts.DefaultDiskWearCrit)
		},
		Data: "disk wear", Reads: []string{proxmox, prometheus, demo},
	},
	{
		Name:    "ZFS pool health",
		Rules:   []Rule{{APAZFS, "pool health not online: critical"}},
		Key:     "zfs_pool_degraded",
		Patrold: fixed("DEGRADED or device errors: warning; FAULTED, UNAVAIL, SUSPENDED, OFFLINE or REMOVED: critical"),
		Data:    "ZFS pool state", Reads: []string{proxmox, demo},
	},
	{
		Name:    "ZFS scrub",
		Key:     "zfs_scrub_overdue",
		Patrold: fixed("last scrub over 35 days ago, or it found or repaired errors: warning"),
		Data:    "ZFS scan state", Reads: []string{proxmox},
	},
	{
		Name:    "stuck lock",
		Key:     "lock_stuck",
		Patrold: fixed("a lock held over 30 minutes with no running task: warning"),
		Data:    "guest locks and tasks", Reads: []string{proxmox},
	},
	{
		Name:    "guest unreachable",
		Key:     "guest_unreachable",
		Patrold: fixed("a running guest does not answer: warning"),
		Data:    "guest reachability", Reads: []string{proxmox, demo},
	},
	{
		Name:    "monitoring API not answering",
		Rules:   []Rule{{Zabbix, "API service not available: high"}},
		Key:     "source_failing",
		Own:     true,
		Patrold: fixed("a source collects nothing: critical, on patrold/source/<name>"),
		Data:    "the source itself", Reads: []string{proxmox, pbs, prometheus, demo},
	},
	{
		Name:  "node restarted",
		Rules: []Rule{{Zabbix, "uptime under 10m: information"}},
		Data:  "node uptime",
	},
	{
		Name:  "Ceph health",
		Rules: []Rule{{PulseRequests, "#358"}},
		Data:  "Ceph status",
	},
	{
		Name:  "systemd unit failed",
		Rules: []Rule{{APANode, "a unit in state failed: warning"}},
		Data:  "systemd unit states",
	},
	{
		Name:  "OOM kill",
		Rules: []Rule{{APANode, "an OOM kill within 1m: warning"}},
		Data:  "kernel OOM counter",
	},
	{
		Name:  "inodes",
		Rules: []Rule{{APANode, "less than 10 % of inodes free for 2m: warning"}},
		Data:  "filesystem inodes",
	},
	{
		Name:  "network errors",
		Rules: []Rule{{APANode, "receive errors above 1 % of packets for 2m: warning"}},
		Data:  "interface counters",
	},
}
