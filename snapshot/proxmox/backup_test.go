package proxmox

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/snapshot"
)

func TestCovered(t *testing.T) {
	on := func(node string, id int64, pool string) clusterResource {
		return clusterResource{Node: node, VMID: number{v: float64(id), set: true}, Pool: pool}
	}
	n := func(v float64) number { return number{v: v, set: true} }
	cases := []struct {
		name  string
		jobs  []backupJob
		guest clusterResource
		want  bool
	}{
		{"all", []backupJob{{All: n(1)}}, on("pve1", 101, ""), true},
		{"all but excluded", []backupJob{{All: n(1), Exclude: "100,101"}}, on("pve1", 101, ""), false},
		{"vmid list", []backupJob{{VMID: "100,101"}}, on("pve1", 101, ""), true},
		{"vmid list without it", []backupJob{{VMID: "100,1010"}}, on("pve1", 101, ""), false},
		{"pool", []backupJob{{Pool: "web"}}, on("pve1", 101, "web"), true},
		{"other pool", []backupJob{{Pool: "db"}}, on("pve1", 101, "web"), false},
		{"disabled", []backupJob{{All: n(1), Enabled: n(0)}}, on("pve1", 101, ""), false},
		{"enabled absent", []backupJob{{All: n(1)}}, on("pve1", 101, ""), true},
		{"bound to another node", []backupJob{{All: n(1), Node: "pve2"}}, on("pve1", 101, ""), false},
		{"bound to its node", []backupJob{{VMID: "101", Node: "pve1"}}, on("pve1", 101, ""), true},
		{"second job", []backupJob{{VMID: "5"}, {VMID: "101"}}, on("pve1", 101, ""), true},
		{"no job", nil, on("pve1", 101, ""), false},
	}
	for _, c := range cases {
		if got := covered(c.jobs, c.guest); got != c.want {
			t.Errorf("%s: covered = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestTaskOutcome(t *testing.T) {
	end := time.Unix(1795918800, 0).UTC()
	n := func(v float64) number { return number{v: v, set: true} }
	cases := []struct {
		task task
		want backupRun
	}{
		{task{Status: "OK", EndTime: n(1795918800)}, backupRun{Status: snapshot.BackupOK, Finished: &end}},
		{task{Status: "WARNINGS: 2", EndTime: n(1795918800)}, backupRun{Status: snapshot.BackupWarning, Finished: &end, Error: "WARNINGS: 2"}},
		{task{StartTime: n(1795918000)}, backupRun{Status: snapshot.BackupRunning}},
		{task{Status: "unable to find VM '101'", EndTime: n(1795918800)}, backupRun{Status: snapshot.BackupFailed, Finished: &end, Error: "unable to find VM '101'"}},
	}
	for _, c := range cases {
		if got := taskRun(c.task); !reflect.DeepEqual(got, c.want) {
			t.Errorf("taskRun(%+v) = %+v, want %+v", c.task, got, c.want)
		}
	}
	job := task{Status: "job errors", EndTime: n(1795918800)}
	log := []logLine{
		{T: "INFO: Starting Backup of VM 1010 (qemu)"}, {T: "INFO: Finished Backup of VM 1010 (00:01:00)"},
		{T: "INFO: Starting Backup of VM 101 (qemu)"}, {T: "ERROR: Backup of VM 101 failed - VM 101 qmp command 'backup' failed - got timeout"},
		{T: "INFO: Starting Backup of VM 102 (qemu)"}, {T: "INFO: Finished Backup of VM 102 (00:00:09)"},
	}
	for id, want := range map[int64]backupRun{
		101:  {Status: snapshot.BackupFailed, Finished: &end, Error: "VM 101 qmp command 'backup' failed - got timeout"},
		102:  {Status: snapshot.BackupOK, Finished: &end},
		1010: {Status: snapshot.BackupOK, Finished: &end},
	} {
		if got, ok := fromLog(log, id, job); !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("fromLog(%d) = %+v %v, want %+v", id, got, ok, want)
		}
	}
	if got, ok := fromLog(log, 10, job); ok {
		t.Errorf("fromLog(10) = %+v, want not found", got)
	}
}

// Failed jobs whose logs do not name a guest are walked past, reading at
// most logBudget logs per node; beyond that the guest's status is unknown.
func TestTaskLogBudget(t *testing.T) {
	fake, srv := newFake(t)
	tasks := `{"data":[`
	for i := range 7 {
		upid := fmt.Sprintf("UPID:pve1:0000000%d:00000000:00000000:vzdump::root@pam:", i)
		if i > 0 {
			tasks += ","
		}
		tasks += fmt.Sprintf(`{"upid":%q,"node":"pve1","type":"vzdump","id":"","starttime":%d,"endtime":%d,"status":"job errors"}`,
			upid, 1795917600-i*86400, 1795918800-i*86400)
		fake.body["nodes/pve1/tasks/"+upid+"/log"] = `{"data":[{"n":1,"t":"ERROR: Backup of VM 999 failed - gone"}]}`
	}
	fake.body["nodes/pve1/tasks"] = tasks + "]}"
	snap, _, err := newSource(t, testOptions(t, srv)).Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	logs := 0
	for _, p := range fake.requested() {
		if strings.HasPrefix(p, "nodes/pve1/tasks/") {
			logs++
		}
	}
	if logs != logBudget {
		t.Errorf("%d task logs read, want %d", logs, logBudget)
	}
	last := time.Date(2026, 11, 29, 2, 5, 0, 0, time.UTC)
	want := &snapshot.Backup{LastStatus: snapshot.BackupUnknown, LastSuccessAt: &last, Storage: "storage/pve1/nfs-backup"}
	if r := find(snap, "vm/101"); r == nil || !reflect.DeepEqual(r.Backup, want) {
		t.Errorf("vm/101 backup = %+v, want %+v", r, want)
	}
}

// TestNewestVolumes: a volume without vmid takes the one its volid names
// (vzdump file names, PBS snapshots), and the newest volume's storage is
// kept, ties going to the storage first by id.
func TestNewestVolumes(t *testing.T) {
	n := func(v float64) number { return number{v: v, set: true} }
	local := []volume{
		{VolID: "local:backup/vzdump-qemu-100-2023_08_28-02_00_01.vma.zst", CTime: n(1693188001)},
		{VolID: "local:backup/vzdump-lxc-200-2023_08_28-02_00_01.tar.zst", Content: "backup", CTime: n(1693188002)},
		{VolID: "local:backup/vzdump-openvz-300-2023_08_28-02_00_01.tar", CTime: n(1693188003)},
		{VolID: "local:backup/not-a-backup-400.tar", CTime: n(1693188004)},
		{VolID: "local:iso/vzdump-qemu-500-x.iso", Content: "iso", CTime: n(1693188005)},
		{VolID: "local:backup/vzdump-qemu-0-2023_08_28.vma", CTime: n(1693188006)},
	}
	pbs := []volume{
		{VolID: "pbs:backup/vm/100/2023-08-29T02:00:01Z", CTime: n(1693274401)},
		{VolID: "pbs:backup/ct/200/2023-08-28T02:00:02Z", CTime: n(1693188002)},
		{VolID: "pbs:backup/host/600/2023-08-28T02:00:02Z", CTime: n(1693188002)},
		{VolID: "pbs:backup/vm/700/x", VMID: n(701), CTime: n(1693188007)},
	}
	got := map[int64]newestBackup{}
	newestVolumes(pbs, "storage/pve1/pbs", got)
	newestVolumes(local, "storage/pve2/local", got)
	want := map[int64]newestBackup{
		100: {ctime: 1693274401, storage: "storage/pve1/pbs"},
		200: {ctime: 1693188002, storage: "storage/pve1/pbs"}, // equally new on both: first by id
		300: {ctime: 1693188003, storage: "storage/pve2/local"},
		701: {ctime: 1693188007, storage: "storage/pve1/pbs"}, // the vmid field wins over the volid
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("newest\n%+v\nwant\n%+v", got, want)
	}
	again := map[int64]newestBackup{}
	newestVolumes(local, "storage/pve2/local", again)
	newestVolumes(pbs, "storage/pve1/pbs", again)
	if !reflect.DeepEqual(again, want) {
		t.Errorf("in the other order\n%+v\nwant\n%+v", again, want)
	}
}

// TestAgentAddressesSkipContainerBridges: only the guest's own interfaces
// are probed, never docker0, br-*, veth*, weave, cni* or flannel*.
func TestAgentAddressesSkipContainerBridges(t *testing.T) {
	ifs, err := decodeOne[agentInterfaces]([]byte(`{"result":[
	 {"name":"ens18","ip-addresses":[{"ip-address":"192.0.2.40"}]},
	 {"name":"docker0","ip-addresses":[{"ip-address":"172.17.0.1"}]},
	 {"name":"br-0c1d2e3f","ip-addresses":[{"ip-address":"172.18.0.1"}]},
	 {"name":"veth9@if2","ip-addresses":[{"ip-address":"169.254.3.3"}]},
	 {"name":"weave","ip-addresses":[{"ip-address":"10.42.0.1"}]},
	 {"name":"cni0","ip-addresses":[{"ip-address":"10.244.0.1"}]},
	 {"name":"flannel.1","ip-addresses":[{"ip-address":"10.244.0.0"}]},
	 {"name":"vmbr0","ip-addresses":[{"ip-address":"198.51.100.7"}]}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	got := agentAddresses(ifs, nil, 22)
	want := []string{"192.0.2.40:22", "198.51.100.7:22"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("addresses %v, want %v", got, want)
	}
}
