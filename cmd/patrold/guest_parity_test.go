package main

import (
	"strconv"
	"testing"
	"time"

	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// pveGuest serves one running VM 100 ("db-1") on pve1 with this lock
// ("" for none) and a plain config.
func pveGuest(pve *pvetest.Server, lock string) {
	l := ""
	if lock != "" {
		l = `,"lock":"` + lock + `"`
	}
	pve.Set("cluster/resources", `[{"id":"node/pve1","type":"node","node":"pve1","status":"online","cpu":0.05,"maxcpu":8,"mem":4294967296,"maxmem":34359738368},`+
		`{"id":"qemu/100","type":"qemu","vmid":100,"node":"pve1","name":"db-1","status":"running","cpu":0.01,"maxcpu":2,"mem":1073741824,"maxmem":4294967296`+l+`}]`)
	pve.Set("nodes/pve1/qemu/100/config", `{"name":"db-1","cores":2,"memory":"4096","onboot":1,"scsi0":"local-lvm:vm-100-disk-0,size=32G"}`)
}

// pveTask is one task entry of GET /nodes/pve1/tasks, PVE 8's shape; an
// end of zero is a task still running.
func pveTask(typ, id, user string, start, end time.Time, status string) string {
	upid := "UPID:pve1:000A1B2C:0BADF00D:" + strconv.FormatInt(start.Unix(), 16) + ":" + typ + ":" + id + ":" + user + ":"
	out := `{"upid":"` + upid + `","node":"pve1","pid":662316,"pstart":195948557,"starttime":` + strconv.FormatInt(start.Unix(), 10) +
		`,"type":"` + typ + `","id":"` + id + `","user":"` + user + `"`
	if !end.IsZero() {
		out += `,"endtime":` + strconv.FormatInt(end.Unix(), 10) + `,"status":"` + status + `"`
	}
	return out + "}"
}

// lockSignal is lock_stuck on vm/100 as the detector writes it.
func lockSignal(lock string, since time.Time, minutes int64, held bool) signals.Signal {
	ev := map[string]any{"lock": lock, "since": since.UTC().Format(time.RFC3339), "minutes": minutes, "running_task": "none",
		"trigger": 30, "clear": 25}
	summary := "vm db-1 (vm/100) has been locked (" + lock + ") for " + strconv.FormatInt(minutes, 10) + " min with no task of it running, above 30"
	if held {
		ev["held_by_hysteresis"] = true
		summary = "vm db-1 (vm/100) has been locked (" + lock + ") for " + strconv.FormatInt(minutes, 10) +
			" min with no task of it running, still above clear 25 after exceeding 30"
	}
	return signals.Signal{Type: signals.TypeLockStuck, ResourceID: "vm/100", ResourceKind: "vm", ResourceName: "db-1",
		Severity: "warning", Category: "reliability", Value: float64(minutes), Threshold: 30, Summary: summary, Evidence: ev}
}

// TestRunLockStuck: through `patrold run` against the PVE stand-in, a
// guest's lock (from /cluster/resources) held with no task of the guest
// running (from /nodes/{node}/tasks) opens lock_stuck strictly above 30
// minutes, counted from the end of the guest's newest task; it is held
// down to 25 and resolves below it, or when a task of the guest runs.
// A backup lock that outlived its backup is lock_stuck too, and opens no
// operation window. The first run reads PVE 7's numbers-as-strings.
func TestRunLockStuck(t *testing.T) {
	pve := pvetest.New(t)
	pveGuest(pve, "create")
	run := parityCLI(t, pve)
	now := time.Now().Truncate(time.Second)
	backupEnded := func(ago time.Duration) string {
		end := now.Add(-ago)
		return pveTask("qmrestore", "100", "root@pam", end.Add(-10*time.Minute), end, "unexpected status")
	}

	// Held 30 minutes (and some seconds): at the trigger, nothing.
	pve.Set("nodes/pve1/tasks", pvetest.PVE7(`[`+backupEnded(30*time.Minute+20*time.Second)+`]`))
	if got := run(); len(got.Signals) != 0 || len(got.Findings) != 0 || got.Status != "healthy" {
		t.Fatalf("at the trigger: %+v", got)
	}

	// 31 minutes: lock_stuck, warning.
	pve.Set("nodes/pve1/tasks", `[`+backupEnded(31*time.Minute+20*time.Second)+`]`)
	since := now.Add(-31*time.Minute - 20*time.Second)
	parityCompare(t, "above the trigger", run(), parityRun{Status: "issues_found",
		Signals:  []signals.Signal{lockSignal("create", since, 31, false)},
		Findings: []string{"new lock_stuck vm/100 warning"}})

	// A newer task of the guest failed on the lock 25 minutes ago: held
	// open by hysteresis.
	failed := now.Add(-25*time.Minute - 20*time.Second)
	pve.Set("nodes/pve1/tasks", `[`+pveTask("qmstart", "100", "root@pam", failed.Add(-time.Second), failed, "VM is locked (create)")+
		`,`+backupEnded(31*time.Minute+20*time.Second)+`]`)
	parityCompare(t, "at clear", run(), parityRun{Status: "issues_found",
		Signals:  []signals.Signal{lockSignal("create", failed, 25, true)},
		Findings: []string{"unchanged lock_stuck vm/100 warning"}})

	// 24 minutes: resolved.
	failed = now.Add(-24*time.Minute - 20*time.Second)
	pve.Set("nodes/pve1/tasks", `[`+pveTask("qmstart", "100", "root@pam", failed.Add(-time.Second), failed, "VM is locked (create)")+`]`)
	parityCompare(t, "below clear", run(), parityRun{Status: "healthy", Resolved: 1,
		Findings: []string{"resolved lock_stuck vm/100 warning"}})

	// Locked for hours while a task of the guest runs: no lock_stuck
	pve.Set("nodes/pve1/tasks", `[`+pveTask("qmigrate", "100", "root@pam", now.Add(-3*time.Hour), time.Time{}, "")+
		`,`+backupEnded(4*time.Hour)+`]`)
	// (a migration is an operation window: patrold's info finding)
	parityCompare(t, "a task runs", run(), parityRun{Status: "healthy",
		Findings: []string{"new operation_window patrold/window/vm/100 info"}})

	// Hibernated (locked suspended by design): nothing; the window closed.
	pveGuest(pve, "suspended")
	pve.Set("nodes/pve1/tasks", `[`+pveTask("qmsuspend", "100", "root@pam", now.Add(-5*time.Hour), now.Add(-4*time.Hour), "OK")+`]`)
	parityCompare(t, "suspended", run(), parityRun{Status: "healthy", Resolved: 1,
		Findings: []string{"resolved operation_window patrold/window/vm/100 info"}})

	// A backup lock 40 minutes after its backup ended: stuck, no window.
	pveGuest(pve, "backup")
	end := now.Add(-40*time.Minute - 20*time.Second)
	pve.Set("nodes/pve1/tasks", `[`+pveTask("vzdump", "100", "root@pam", end.Add(-time.Hour), end, "interrupted by signal")+`]`)
	parityCompare(t, "stuck backup lock", run(), parityRun{Status: "issues_found",
		Signals:  []signals.Signal{lockSignal("backup", end, 40, false)},
		Findings: []string{"reopened lock_stuck vm/100 warning"}})
}
