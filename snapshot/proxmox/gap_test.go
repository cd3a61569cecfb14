package proxmox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// TestGapOf: a read the API refuses (403) or does not serve (501) is a
// warning with a coverage gap naming the check, the keys resting on it,
// the endpoint and the privilege; any other error answer is not a gap.
func TestGapOf(t *testing.T) {
	pve := pvetest.New(t)
	pve.Fail("nodes/pve1/certificates/info", 403, "Permission check failed (/nodes/pve1, Sys.Audit)")
	pve.Fail("cluster/ha/status/current", 501, "Method 'GET /cluster/ha/status/current' not implemented")
	pve.Fail("nodes/pve1/replication", 500, "replication state unreadable")
	o := testOptions(t, pve.Server)
	o.TokenID, o.TokenSecretFile = pvetest.TokenID, filepath.Join(t.TempDir(), "pve.token")
	if err := os.WriteFile(o.TokenSecretFile, []byte(pvetest.Secret), 0o600); err != nil {
		t.Fatal(err)
	}
	o.GuestAgent.Enabled = false
	_, problems, err := newSource(t, o).Collect(context.Background())
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	want := []snapshot.Problem{
		{ID: SourceProblemID, Index: -1, Field: "GET /cluster/ha/status/current", Warning: true,
			Problem: "HTTP 501 Method 'GET /cluster/ha/status/current' not implemented; the HA state of guests and nodes left out; " +
				"this PVE does not serve it: ha_error, guest_down not evaluated",
			Gap: &snapshot.Gap{Check: "cluster_ha_status", Keys: []string{"ha_error", "guest_down"}, Endpoint: "GET /cluster/ha/status/current", Status: 501}},
		{ID: "node/pve1", Index: -1, Field: "GET /nodes/pve1/replication",
			Problem: "node pve1: HTTP 500 replication state unreadable"},
		{ID: "node/pve1", Index: -1, Field: "GET /nodes/pve1/certificates/info", Warning: true,
			Problem: "node pve1: HTTP 403 Permission check failed (/nodes/pve1, Sys.Audit); grant the API token Sys.Audit for certificate_expiring",
			Gap: &snapshot.Gap{Check: "certificates", Keys: []string{"certificate_expiring"}, Endpoint: "GET /nodes/pve1/certificates/info",
				Privilege: "Sys.Audit", Status: 403}},
	}
	if !reflect.DeepEqual(problems, want) {
		t.Errorf("problems:\n got %+v\nwant %+v", problems, want)
	}
}

// TestCoverageHiddenGuests: a resource list without guests while HA
// resources, replication jobs or backup jobs name guests is a coverage
// gap of VM.Audit, not an empty fleet; it is gone once guests are
// listed. A guest-less list where nothing names a guest, or only one
// id in a backup job (a deleted guest's), and a listed fleet whose jobs
// name a deleted guest are no gap.
func TestCoverageHiddenGuests(t *testing.T) {
	pve := pvetest.New(t)
	o := testOptions(t, pve.Server)
	o.TokenID, o.TokenSecretFile = pvetest.TokenID, filepath.Join(t.TempDir(), "pve.token")
	if err := os.WriteFile(o.TokenSecretFile, []byte(pvetest.Secret), 0o600); err != nil {
		t.Fatal(err)
	}
	o.GuestAgent.Enabled = false
	src := newSource(t, o)
	problems := func() []snapshot.Problem {
		t.Helper()
		_, problems, err := src.Collect(context.Background())
		if err != nil {
			t.Fatalf("Collect: %v", err)
		}
		return problems
	}
	gap := func(named string) []snapshot.Problem {
		return []snapshot.Problem{{ID: SourceProblemID, Index: -1, Field: "GET /cluster/resources", Warning: true,
			Problem: "lists no guest, yet the cluster names guests: " + named + "; grant the API token VM.Audit (PVEAuditor on /vms) for " +
				"high_cpu, high_memory, high_disk, backup_failed, backup_stale, backup_unscheduled, guest_down, guest_unreachable, ha_error, replication_failed, snapshot_old, lock_stuck",
			Gap: &snapshot.Gap{Check: "cluster_resources", Keys: guestKeys, Endpoint: "GET /cluster/resources", Privilege: "VM.Audit", Status: 200, Unlisted: true}}}
	}
	job := func(vmids string) string {
		return `[{"id":"backup-1","type":"vzdump","enabled":1,"storage":"pbs","schedule":"21:00","vmid":"` + vmids + `"}]`
	}
	const node = `{"id":"node/pve1","type":"node","node":"pve1","status":"online","cpu":0.05,"maxcpu":8,"mem":4294967296,"maxmem":34359738368}`
	guest := func(id int) string {
		return fmt.Sprintf(`{"id":"qemu/%d","type":"qemu","vmid":%d,"name":"g%d","node":"pve1","status":"running","cpu":0.1,"maxcpu":4,"mem":2e9,"maxmem":8e9,"uptime":600,"template":0}`, id, id, id)
	}

	if got := problems(); len(got) != 0 {
		t.Errorf("a cluster without guests that names none: %+v", got)
	}
	pve.Set("cluster/backup", job("104"))
	if got := problems(); len(got) != 0 {
		t.Errorf("one id in a backup job, no guest: %+v", got)
	}

	pve.Set("cluster/backup", job("104,105,106,107,108,109"))
	if got, want := problems(), gap("backup jobs of 104, 105, 106, 107, 108 and 1 more"); !reflect.DeepEqual(got, want) {
		t.Errorf("backup jobs naming guests:\n got %+v\nwant %+v", got, want)
	}
	pve.Set("cluster/backup", `[]`)
	pve.Set("cluster/ha/status/current", pvetest.HAStatus(nil, map[string]string{"vm:100": "started", "ct:101": "started"}))
	pve.Set("nodes/pve1/replication", `[{"id":"100-0","guest":100,"target":"pve2","type":"local","schedule":"*/15","fail_count":0,"last_sync":1796032000}]`)
	if got, want := problems(), gap("HA resources of container/101, vm/100, replication jobs of 100"); !reflect.DeepEqual(got, want) {
		t.Errorf("HA resources and replication naming guests:\n got %+v\nwant %+v", got, want)
	}

	// The token may see the guests again; one of its jobs' ids is a
	// deleted guest's.
	pve.Set("cluster/resources", "["+node+","+guest(100)+"]")
	pve.Set("cluster/backup", job("100,104"))
	pve.Set("nodes/pve1/qemu/100/config", `{"name":"g100","memory":2048}`)
	pve.Set("nodes/pve1/qemu/100/snapshot", `[{"name":"current","description":"You are here!","running":1}]`)
	pve.Set("nodes/pve1/tasks", `[]`)
	if got := problems(); len(got) != 0 {
		t.Errorf("guests listed: %+v", got)
	}
}
