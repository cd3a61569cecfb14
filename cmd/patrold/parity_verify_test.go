package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// TestRunBackupUnverified: through `patrold run` against the PVE
// stand-in, a guest backed up to a PBS storage whose volumes carry
// verification states: its newest backup verified ok 6.9 days ago is
// nothing, 7.1 days ago watch (guest.verify_age 7), and its newest
// backup's verification failed a warning; verified again, it resolves;
// never verified where the storage verifies others, watch. A storage none of whose volumes was ever verified is not
// judged. The first run reads PVE 7's numbers-as-strings.
func TestRunBackupUnverified(t *testing.T) {
	pve := pvetest.New(t)
	pve.Set("cluster/resources", `[{"id":"node/pve1","type":"node","node":"pve1","status":"online","cpu":0.05,"maxcpu":8,"mem":4294967296,"maxmem":34359738368},`+
		`{"id":"qemu/100","type":"qemu","vmid":100,"name":"web","node":"pve1","status":"running","cpu":0.01,"maxcpu":2,"mem":1073741824,"maxmem":4294967296,"uptime":3600,"template":0},`+
		`{"id":"storage/pve1/pbs","type":"storage","storage":"pbs","node":"pve1","status":"available","disk":1000,"maxdisk":100000,"content":"backup","plugintype":"pbs","shared":1}]`)
	pve.Set("cluster/backup", `[{"id":"backup-1","type":"vzdump","enabled":1,"all":1,"storage":"pbs","schedule":"21:00"}]`)
	pve.Set("nodes/pve1/qemu/100/config", `{"name":"web","memory":"4096","scsi0":"local-lvm:vm-100-disk-0,size=8G","onboot":0}`)
	run := parityCLI(t, pve)
	day := 24 * time.Hour
	backedUp := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	pve.Set("nodes/pve1/tasks", fmt.Sprintf(`[{"upid":"UPID:pve1:0001:0002:%08X:vzdump:100:root@pam:","node":"pve1","type":"vzdump","id":"100","user":"root@pam","starttime":%d,"endtime":%d,"status":"OK"}]`,
		backedUp.Unix()-600, backedUp.Unix()-600, backedUp.Unix()))
	content := func(verify string) string {
		return fmt.Sprintf(`[{"volid":"pbs:backup/vm/100/%s","content":"backup","format":"pbs-vm","size":1073741824,"ctime":%d,"vmid":100%s}]`,
			backedUp.Format(time.RFC3339), backedUp.Unix(), verify)
	}
	verified := func(state string, ago time.Duration) string {
		return fmt.Sprintf(`,"verification":{"state":%q,"upid":"UPID:pbs:000004D2:0000162E:00000001:%08X:verificationjob:main-v-1:root@pam:"}`, state, time.Now().Add(-ago).Unix())
	}
	sig := func(severity, verification, summary string, days float64) signals.Signal {
		ev := map[string]any{"verification": verification, "trigger": 7, "storage": "storage/pve1/pbs"}
		if days >= 0 {
			ev["days_since_verified"] = days
		}
		return signals.Signal{Type: signals.TypeBackupUnverified, ResourceID: "vm/100", ResourceKind: "vm", ResourceName: "web",
			Severity: severity, Category: "backup", Value: max(days, 0), Threshold: 7, Summary: summary, Evidence: ev}
	}
	strip := func(r parityRun) parityRun {
		for i := range r.Signals {
			delete(r.Signals[i].Evidence, "last_verified_at")
		}
		return r
	}

	// Verified ok 6.9 days ago, PVE 7's strings: nothing.
	pve.Set("nodes/pve1/storage/pbs/content", pvetest.PVE7(content(verified("ok", 6*day+22*time.Hour))))
	if got := run(); len(got.Signals) != 0 || got.Status != "healthy" {
		t.Fatalf("6.9 days: %+v", got)
	}

	pve.Set("nodes/pve1/storage/pbs/content", content(verified("ok", 7*day+3*time.Hour)))
	parityCompare(t, "7.1 days", strip(run()), parityRun{Status: "healthy", Signals: []signals.Signal{sig("watch", "ok",
		"vm web (vm/100): no backup of it verified for 7.1 days (more than 7)", 7.1)},
		Findings: []string{"new backup_unverified vm/100 watch"}})

	pve.Set("nodes/pve1/storage/pbs/content", content(verified("failed", time.Hour)))
	parityCompare(t, "failed", strip(run()), parityRun{Status: "issues_found", Signals: []signals.Signal{sig("warning", "failed",
		"vm web (vm/100): the verification of its newest backup failed", -1)},
		Findings: []string{"updated backup_unverified vm/100 warning"}})

	pve.Set("nodes/pve1/storage/pbs/content", content(verified("ok", time.Hour)))
	parityCompare(t, "verified", strip(run()), parityRun{Status: "healthy", Resolved: 1,
		Findings: []string{"resolved backup_unverified vm/100 warning"}})

	// The storage verifies (another guest's backup), this guest's backup
	// never was: watch.
	other := fmt.Sprintf(`{"volid":"pbs:backup/vm/999/x","content":"backup","format":"pbs-vm","ctime":%d,"vmid":999%s}`, backedUp.Unix(), verified("ok", time.Hour))
	pve.Set("nodes/pve1/storage/pbs/content", content("")[:len(content(""))-1]+","+other+"]")
	parityCompare(t, "never verified", strip(run()), parityRun{Status: "healthy", Signals: []signals.Signal{sig("watch", "none",
		"vm web (vm/100): no backup of it was ever verified", -1)},
		Findings: []string{"reopened backup_unverified vm/100 watch"}})

	// A storage that verifies nothing: not judged.
	pve.Set("nodes/pve1/storage/pbs/content", content(""))
	if got := run(); len(got.Signals) != 0 || got.Status != "healthy" {
		t.Fatalf("never verified storage: %+v", got)
	}
}
