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
	want := &snapshot.Backup{LastStatus: snapshot.BackupUnknown, LastSuccessAt: &last}
	if r := find(snap, "vm/101"); r == nil || !reflect.DeepEqual(r.Backup, want) {
		t.Errorf("vm/101 backup = %+v, want %+v", r, want)
	}
}
