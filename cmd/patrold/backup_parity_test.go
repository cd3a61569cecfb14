package main

import (
	"testing"

	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// pveBackupGuests serves VM 100 ("db-1", pool prod, tags as given), CT
// 101 ("scratch", tagged nobackup) and template 9000, all on pve1.
func pveBackupGuests(pve *pvetest.Server, tags100 string) {
	pve.Set("cluster/resources", `[{"id":"node/pve1","type":"node","node":"pve1","status":"online","cpu":0.05,"maxcpu":8,"mem":4294967296,"maxmem":34359738368},`+
		`{"id":"qemu/100","type":"qemu","vmid":100,"node":"pve1","name":"db-1","status":"running","cpu":0.01,"maxcpu":2,"mem":1073741824,"maxmem":4294967296,"pool":"prod","template":0,"tags":"`+tags100+`"},`+
		`{"id":"lxc/101","type":"lxc","vmid":101,"node":"pve1","name":"scratch","status":"running","cpu":0.01,"maxcpu":1,"mem":67108864,"maxmem":536870912,"template":0,"tags":"lab;nobackup"},`+
		`{"id":"qemu/9000","type":"qemu","vmid":9000,"node":"pve1","name":"tpl","status":"stopped","maxcpu":2,"maxmem":2147483648,"template":1}]`)
	pve.Set("nodes/pve1/qemu/100/config", `{"name":"db-1","cores":2,"memory":"4096","scsi0":"local-lvm:vm-100-disk-0,size=32G"}`)
	pve.Set("nodes/pve1/lxc/101/config", `{"hostname":"scratch","memory":512,"rootfs":"local-lvm:subvol-101-disk-0,size=8G"}`)
}

// unscheduledSignal is backup_unscheduled on vm/100 as the detector
// writes it.
func unscheduledSignal() signals.Signal {
	return signals.Signal{Type: signals.TypeBackupUnscheduled, ResourceID: "vm/100", ResourceKind: "vm", ResourceName: "db-1",
		Severity: "warning", Category: "backup",
		Summary:  "vm db-1 (vm/100) is in no enabled backup job (not by id, pool or all); tag it nobackup if that is meant",
		Evidence: map[string]any{"backup_jobs": "none enabled selects it", "exclude_tag": "nobackup"}}
}

// TestRunBackupUnscheduled: through `patrold run` against the PVE
// stand-in, a guest no enabled backup job selects (/cluster/backup: by
// vmid, pool, or all minus exclude, on its node) is backup_unscheduled,
// a warning. A guest tagged nobackup and a template are never judged; a
// cluster with no backup job at all judges nothing. A disabled job
// selects nothing; a job of another node neither. The guest's tag, or a
// job of its pool, resolves the finding. The first run reads PVE 7's
// numbers-as-strings.
func TestRunBackupUnscheduled(t *testing.T) {
	pve := pvetest.New(t)
	pveBackupGuests(pve, "prod")
	run := parityCLI(t, pve)

	// No backup job at all: backups are done elsewhere, nothing.
	if got := run(); len(got.Signals) != 0 || len(got.Findings) != 0 || got.Status != "healthy" {
		t.Fatalf("no job: %+v", got)
	}

	// All but 100 and 101, a job of pve2, a disabled job of 100.
	jobs := `[{"id":"backup-a","type":"vzdump","enabled":1,"all":1,"exclude":"100,101","storage":"pbs"},` +
		`{"id":"backup-b","type":"vzdump","all":1,"node":"pve2","storage":"pbs"},` +
		`{"id":"backup-c","type":"vzdump","enabled":0,"vmid":"100","storage":"pbs"}]`
	pve.Set("cluster/backup", pvetest.PVE7(jobs))
	parityCompare(t, "in no enabled job", run(), parityRun{Status: "issues_found",
		Signals:  []signals.Signal{unscheduledSignal()},
		Findings: []string{"new backup_unscheduled vm/100 warning"}})

	// Tagged nobackup: meant, resolved.
	pveBackupGuests(pve, "prod;nobackup")
	pve.Set("cluster/backup", jobs)
	parityCompare(t, "tagged", run(), parityRun{Status: "healthy", Resolved: 1,
		Findings: []string{"resolved backup_unscheduled vm/100 warning"}})

	// Untagged again, then selected by a job of its pool: resolved.
	pveBackupGuests(pve, "prod")
	parityCompare(t, "untagged", run(), parityRun{Status: "issues_found",
		Signals:  []signals.Signal{unscheduledSignal()},
		Findings: []string{"reopened backup_unscheduled vm/100 warning"}})
	pve.Set("cluster/backup", `[{"id":"backup-d","type":"vzdump","enabled":1,"pool":"prod","storage":"pbs"}]`)
	// Now tracked, it has never had a backup: backup_stale takes over.
	parityCompare(t, "pool job", run(), parityRun{Status: "issues_found", Resolved: 1,
		Signals: []signals.Signal{{Type: signals.TypeBackupStale, ResourceID: "vm/100", ResourceKind: "vm", ResourceName: "db-1",
			Severity: "warning", Category: "backup", Value: -1, Threshold: 48,
			Summary:  "db-1 (vm/100) has never had a successful backup",
			Evidence: map[string]any{"last_success_at": nil, "max_age": "48h0m0s"}}},
		Findings: []string{"new backup_stale vm/100 warning", "resolved backup_unscheduled vm/100 warning"}})
}
