package main

import (
	"testing"

	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// haSignal is an ha_error signal as the detector writes it.
func haSignal(id, kind, name, severity, summary string, ev map[string]any) signals.Signal {
	return signals.Signal{Type: signals.TypeHAError, ResourceID: id, ResourceKind: snapshot.Kind(kind),
		ResourceName: name, Severity: severity, Category: "reliability", Summary: summary, Evidence: ev}
}

// TestRunHAError: through `patrold run` against the PVE stand-in, the HA
// manager's /cluster/ha/status/current opens ha_error on the guest of an
// HA service in error or fence (critical), recovery or freeze (warning),
// and on a node whose LRM is neither active nor idle (warning; watch in
// maintenance). Started services and active or idle LRMs are the edges
// that file nothing. A failed read keeps the findings open; a guest
// taken out of HA and healthy states resolve them. The first run reads
// PVE 7's numbers-as-strings.
func TestRunHAError(t *testing.T) {
	pve := pvetest.New(t)
	pve.Set("cluster/resources", `[{"id":"node/pve1","type":"node","node":"pve1","status":"online","cpu":0.05,"maxcpu":8,"mem":1,"maxmem":4},`+
		`{"id":"qemu/100","type":"qemu","vmid":100,"name":"app","node":"pve1","status":"running","template":0,"hastate":"error"},`+
		`{"id":"lxc/200","type":"lxc","vmid":200,"name":"proxy","node":"pve1","status":"running","template":0,"hastate":"started"}]`)
	pve.Set("nodes/pve1/qemu/100/config", `{"name":"app","onboot":1}`)
	pve.Set("nodes/pve1/lxc/200/config", `{"hostname":"proxy"}`)
	run := parityCLI(t, pve)
	ha := func(lrm, vm, ct string) {
		pve.Set("cluster/ha/status/current", pvetest.HAStatus(map[string]string{"pve1": lrm}, map[string]string{"vm:100": vm, "ct:200": ct}))
	}

	// The edges that file nothing: started services, an active LRM, an
	// idle one.
	pve.Set("cluster/ha/status/current", pvetest.PVE7(pvetest.HAStatus(map[string]string{"pve1": "active"},
		map[string]string{"vm:100": "started", "ct:200": "started"})))
	if got := run(); len(got.Signals) != 0 || len(got.Findings) != 0 || got.Status != "healthy" {
		t.Fatalf("started, active: %+v", got)
	}
	ha("idle", "started", "started")
	if got := run(); len(got.Signals) != 0 || len(got.Findings) != 0 || got.Status != "healthy" {
		t.Fatalf("started, idle: %+v", got)
	}

	// error, recovery, maintenance.
	ha("maintenance mode", "error", "recovery")
	want := parityRun{Status: "critical", Signals: []signals.Signal{
		haSignal("node/pve1", "node", "pve1", "watch", "HA local resource manager of node pve1 (node/pve1) is in state maintenance",
			map[string]any{"lrm_state": "maintenance"}),
		haSignal("vm/100", "vm", "app", "critical", "HA resource app (vm/100) is in state error (requested started)",
			map[string]any{"state": "error", "requested": "started"}),
		haSignal("container/200", "container", "proxy", "warning", "HA resource proxy (container/200) is in state recovery (requested started)",
			map[string]any{"state": "recovery", "requested": "started"}),
	}, Findings: []string{"new ha_error container/200 warning", "new ha_error node/pve1 watch", "new ha_error vm/100 critical"}}
	parityCompare(t, "error, recovery, maintenance", run(), want)

	// fence, freeze, a dead LRM.
	ha("old timestamp - dead?", "fence", "freeze")
	want = parityRun{Status: "critical", Signals: []signals.Signal{
		haSignal("node/pve1", "node", "pve1", "warning", "HA local resource manager of node pve1 (node/pve1) is in state old timestamp - dead?",
			map[string]any{"lrm_state": "old timestamp - dead?"}),
		haSignal("vm/100", "vm", "app", "critical", "HA resource app (vm/100) is in state fence (requested started)",
			map[string]any{"state": "fence", "requested": "started"}),
		haSignal("container/200", "container", "proxy", "warning", "HA resource proxy (container/200) is in state freeze (requested started)",
			map[string]any{"state": "freeze", "requested": "started"}),
	}, Findings: []string{"unchanged ha_error container/200 warning", "unchanged ha_error vm/100 critical", "updated ha_error node/pve1 warning"}}
	parityCompare(t, "fence, freeze, dead", run(), want)

	// The HA manager's status not read: nothing resolves.
	pve.Fail("cluster/ha/status/current", 500, "cfs lock timeout")
	if got := run(); got.Resolved != 0 || len(got.Signals) != 0 {
		t.Fatalf("HA status not read: %+v", got)
	}

	// vm:100 taken out of HA, the rest healthy: all three resolve.
	pve.Set("cluster/ha/status/current", pvetest.HAStatus(map[string]string{"pve1": "active"}, map[string]string{"ct:200": "started"}))
	parityCompare(t, "out of HA, healthy", run(), parityRun{Status: "healthy", Resolved: 3,
		Findings: []string{"resolved ha_error container/200 warning", "resolved ha_error node/pve1 warning", "resolved ha_error vm/100 critical"}})
}
