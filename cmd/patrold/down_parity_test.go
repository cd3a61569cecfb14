package main

import (
	"strconv"
	"testing"
	"time"

	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// pveStopped serves VM 100 ("db-1") on pve1, stopped, with onboot as
// given.
func pveStopped(pve *pvetest.Server, onboot int) {
	pve.Set("cluster/resources", `[{"id":"node/pve1","type":"node","node":"pve1","status":"online","cpu":0.05,"maxcpu":8,"mem":4294967296,"maxmem":34359738368},`+
		`{"id":"qemu/100","type":"qemu","vmid":100,"node":"pve1","name":"db-1","status":"stopped","maxcpu":2,"maxmem":4294967296}]`)
	pve.Set("nodes/pve1/qemu/100/config", `{"name":"db-1","cores":2,"memory":"4096","onboot":`+strconv.Itoa(onboot)+`,"scsi0":"local-lvm:vm-100-disk-0,size=32G"}`)
}

// downSignal is guest_down on vm/100 as the detector writes it.
func downSignal(severity, why, task string) signals.Signal {
	return signals.Signal{Type: signals.TypeGuestDown, ResourceID: "vm/100", ResourceKind: "vm", ResourceName: "db-1",
		Severity: severity, Category: "reliability",
		Summary:  "vm db-1 (vm/100) is stopped but should run (" + why + "); no user stop since its last start (last start or stop task: " + task + ")",
		Evidence: map[string]any{"status": "stopped", "should_run": why, "last_power_task": task}}
}

// TestRunGuestDown: through `patrold run` against the PVE stand-in, the
// intent cases of guest_down. A guest with onboot that crashed after
// its last start is guest_down (warning) quoting the start task; one a
// user shut down since is nothing, and the finding resolves; one with
// onboot 0 is nothing; one with no start or stop task listed says
// none found; an HA resource in state started is critical (HA decides,
// not onboot).
func TestRunGuestDown(t *testing.T) {
	pve := pvetest.New(t)
	pveStopped(pve, 1)
	run := parityCLI(t, pve)
	now := time.Now().Truncate(time.Second)
	started := now.Add(-2 * time.Hour)
	start := pveTask("qmstart", "100", "root@pam", started, started.Add(3*time.Second), "OK")
	startUPID := "UPID:pve1:000A1B2C:0BADF00D:" + strconv.FormatInt(started.Unix(), 16) + ":qmstart:100:root@pam:"
	startText := "qmstart by root@pam at " + started.UTC().Format(time.RFC3339) + " (" + startUPID + ")"

	// Crashed with onboot: its last start, no stop since (PVE 7 shapes).
	pve.Set("nodes/pve1/tasks", pvetest.PVE7(`[`+pveTask("vzdump", "101", "root@pam", now.Add(-time.Hour), now.Add(-50*time.Minute), "OK")+`,`+start+`]`))
	parityCompare(t, "crashed", run(), parityRun{Status: "issues_found",
		Signals:  []signals.Signal{downSignal("warning", "onboot", startText)},
		Findings: []string{"new guest_down vm/100 warning"}})

	// A user shut it down since: on purpose, resolved.
	stop := pveTask("qmshutdown", "100", "ops@pve", now.Add(-10*time.Minute), now.Add(-9*time.Minute), "OK")
	pve.Set("nodes/pve1/tasks", `[`+stop+`,`+start+`]`)
	parityCompare(t, "stopped by a user", run(), parityRun{Status: "healthy", Resolved: 1,
		Findings: []string{"resolved guest_down vm/100 warning"}})

	// Not meant to start at boot: nothing, whatever its tasks.
	pveStopped(pve, 0)
	pve.Set("nodes/pve1/tasks", `[`+start+`]`)
	if got := run(); len(got.Signals) != 0 || len(got.Findings) != 0 || got.Status != "healthy" {
		t.Fatalf("onboot 0: %+v", got)
	}

	// onboot, and no start or stop task listed: none found.
	pveStopped(pve, 1)
	pve.Set("nodes/pve1/tasks", `[]`)
	parityCompare(t, "no task", run(), parityRun{Status: "issues_found",
		Signals:  []signals.Signal{downSignal("warning", "onboot", "none found")},
		Findings: []string{"reopened guest_down vm/100 warning"}})

	// HA-managed, requested started (HA decides, not onboot): critical.
	pveStopped(pve, 0)
	pve.Set("cluster/ha/status/current", pvetest.HAStatus(map[string]string{"pve1": "active"}, map[string]string{"vm:100": "started"}))
	parityCompare(t, "HA started", run(), parityRun{Status: "critical",
		Signals:  []signals.Signal{downSignal("critical", "HA state started", "none found")},
		Findings: []string{"updated guest_down vm/100 critical"}})
}
