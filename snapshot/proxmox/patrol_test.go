package proxmox

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/store"
)

// runOutcome is the part of a run report that the source decides.
type runOutcome struct {
	Status        string           `json:"status"`
	StatusReasons []string         `json:"status_reasons"`
	Resources     map[string]int   `json:"resources"`
	Signals       []signals.Signal `json:"signals"`
	Errors        []string         `json:"errors"`
	Resolved      []string         `json:"resolved"`
}

// TestPatrolRunOverCluster runs a real patrol (SQLite store, default
// thresholds) over the fake cluster and checks what it detects, then runs
// again with a node timing out: the run is degraded, incomplete, and
// resolves nothing.
func TestPatrolRunOverCluster(t *testing.T) {
	fake, srv := newFake(t)
	_, run := patrolOver(t, srv)
	golden(t, "run.golden.json", run())

	fake.hang["pve2"] = true
	second := run()
	if second.Status != "degraded" || len(second.Resolved) != 0 {
		t.Errorf("run with pve2 timing out: status %s, resolved %v; want degraded, nothing resolved", second.Status, second.Resolved)
	}
	golden(t, "run-timeout.golden.json", second)
}

// patrolOver is a real patrol (SQLite store, default thresholds) over
// the fake cluster at srv: its store, and a manual run's outcome.
func patrolOver(t *testing.T, srv *httptest.Server) (*store.Store, func() runOutcome) {
	t.Helper()
	o := testOptions(t, srv)
	o.Timeout = 300 * time.Millisecond
	src := newSource(t, o)
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "patrold.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pol, err := alerts.New(alerts.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	runner, err := patrol.New(patrol.Options{Store: st, Now: func() time.Time { return evalTime },
		Settings: func() patrol.Settings {
			return patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy(), Source: src}
		}})
	if err != nil {
		t.Fatal(err)
	}
	return st, func() runOutcome {
		rep, err := runner.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{})
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		return runOutcome{Status: rep.Status, StatusReasons: rep.StatusReasons, Resources: rep.Resources,
			Signals: rep.Signals, Errors: rep.Errors, Resolved: rep.Resolved}
	}
}

// TestFullVolumeStorageHoldsItsGuests: pve1's local-lvm, where vm/102's
// disk is (its config's scsi0), fills, and so does vm/102's disk; the
// storage's critical high_disk explains vm/102's high_disk, which is held
// under it, and never its backup findings (docs/FINDINGS.md#inhibition).
// When it has room again the guest's finding is released, still active
// (its disk figure is gone: the run cannot evaluate it). container/200's
// disk finding is held by pve2's full local-lvm throughout. Every other
// finding is held by nothing.
func TestFullVolumeStorageHoldsItsGuests(t *testing.T) {
	fake, srv := newFake(t)
	resources, err := os.ReadFile(filepath.Join("testdata", "api2", "json", "cluster", "resources.json"))
	if err != nil {
		t.Fatal(err)
	}
	const room = `"storage":"local-lvm","node":"pve1","status":"available","disk":214748364800`
	full := strings.Replace(string(resources), room, `"storage":"local-lvm","node":"pve1","status":"available","disk":850000000000`, 1)
	if full == string(resources) {
		t.Fatalf("resources.json has no %s", room)
	}
	const vmDisk = `"disk":0,"maxdisk":17179869184,"uptime":7200,"template":0,"tags":"prod;web"`
	if !strings.Contains(full, vmDisk) {
		t.Fatalf("resources.json has no %s", vmDisk)
	}
	full = strings.Replace(full, vmDisk, strings.Replace(vmDisk, `"disk":0`, `"disk":16000000000`, 1), 1)
	fake.body["cluster/resources"] = full
	st, run := patrolOver(t, srv)
	held := func() map[string]string {
		t.Helper()
		fs, err := st.List(context.Background(), findings.ListFilter{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, f := range fs {
			if f.Active() {
				out[f.ResourceID+" "+f.Key] = f.InhibitedBy
			}
		}
		return out
	}
	run()
	parent := findings.ID("storage/pve1/local-lvm", findings.CategoryCapacity, string(signals.TypeHighDisk))
	want := map[string]string{}
	for _, s := range []string{"node/pve2 high_cpu", "node/pve2 high_memory", "node/pve3 node_offline", "vm/101 high_memory",
		"container/200 high_disk", "storage/pve1/bulk high_disk", "storage/pve2/cloud-init high_disk", "storage/pve2/local-lvm high_disk",
		"storage/pve2/zpool/tank high_disk", "storage/pve2/zpool/tank zfs_pool_degraded", "disk/pve1/sda smart_failure",
		"disk/pve2/nvme0n1 smart_failure", "disk/pve2/nvme0n1 disk_wear", "disk/pve2/sda smart_failure", "disk/pve2/sdb smart_failure",
		"disk/pve2/sdb disk_temperature", "storage/pve1/local-lvm high_disk",
		"node/pve2 ha_error", "node/pve3 ha_error", "vm/104 ha_error", "container/200 ha_error", "vm/102 replication_failed", "node/pve1 certificate_expiring", "node/pve1 updates_pending", "container/201 backup_unscheduled", "vm/102 snapshot_old"} {
		want[s] = ""
	}
	want["vm/102 backup_failed"], want["vm/102 backup_stale"], want["vm/102 high_disk"] = "", "", parent
	// container/200's root disk is on pve2's local-lvm, full all along.
	want["container/200 high_disk"] = findings.ID("storage/pve2/local-lvm", findings.CategoryCapacity, string(signals.TypeHighDisk))
	if got := held(); !reflect.DeepEqual(got, want) {
		t.Fatalf("active findings and what holds them:\n got %v\nwant %v", got, want)
	}
	delete(fake.body, "cluster/resources")
	run()
	delete(want, "storage/pve1/local-lvm high_disk")
	want["vm/102 high_disk"] = ""
	if got := held(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after local-lvm has room again:\n got %v\nwant %v", got, want)
	}
}
