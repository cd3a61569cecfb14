package main

import (
	"testing"

	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// TestRunBackupUnscheduledByPVE: where PVE serves
// /cluster/backup-info/not-backed-up, its list decides backup_unscheduled
// over the jobs' selection: a guest a job selects by id, but PVE lists,
// is backup_unscheduled; PVE listing none resolves it. Not served (501,
// an older PVE), the jobs' selection decides again, and no coverage gap
// is filed: nothing is left unevaluated. The first read is PVE 7's
// numbers-as-strings.
func TestRunBackupUnscheduledByPVE(t *testing.T) {
	pve := pvetest.New(t)
	pveBackupGuests(pve, "prod")
	pve.Set("cluster/backup", `[{"id":"backup-a","type":"vzdump","enabled":1,"vmid":"100","storage":"pbs"}]`)
	run := parityCLI(t, pve)
	stale := signals.Signal{Type: signals.TypeBackupStale, ResourceID: "vm/100", ResourceKind: "vm", ResourceName: "db-1",
		Severity: "warning", Category: "backup", Value: -1, Threshold: 48,
		Summary:  "db-1 (vm/100) has never had a successful backup",
		Evidence: map[string]any{"last_success_at": nil, "max_age": "48h0m0s"}}

	pve.Set("cluster/backup-info/not-backed-up", pvetest.PVE7(`[{"vmid":100,"name":"db-1","type":"qemu"}]`))
	parityCompare(t, "listed by PVE", run(), parityRun{Status: "issues_found",
		Signals:  []signals.Signal{stale, unscheduledSignal()},
		Findings: []string{"new backup_stale vm/100 warning", "new backup_unscheduled vm/100 warning"}})

	pve.Set("cluster/backup-info/not-backed-up", `[]`)
	parityCompare(t, "listed none", run(), parityRun{Status: "issues_found", Resolved: 1, Signals: []signals.Signal{stale},
		Findings: []string{"resolved backup_unscheduled vm/100 warning", "unchanged backup_stale vm/100 warning"}})

	pve.Fail("cluster/backup-info/not-backed-up", 501, "Method 'GET /cluster/backup-info/not-backed-up' not implemented")
	parityCompare(t, "not served", run(), parityRun{Status: "issues_found", Signals: []signals.Signal{stale},
		Findings: []string{"unchanged backup_stale vm/100 warning"}})
}
