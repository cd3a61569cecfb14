package proxmox

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// TestReplicationNamesTheField: a replication job of the wrong type names
// its index and field; PVE 7's strings read as numbers; disabled jobs are
// left out.
func TestReplicationNamesTheField(t *testing.T) {
	_, err := decodeList[replicationJob]([]byte(`[{"guest":100},{"guest":101},{"guest":102,"fail_count":true}]`))
	if want := "data[2].fail_count: must be a number, got true"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	jobs, err := decodeList[replicationJob]([]byte(`[{"id":"100-0","guest":"100","target":"pve2","schedule":"*/5","last_sync":"1795946400","fail_count":"2","error":"boom"},` +
		`{"id":"100-1","guest":100,"target":"pve3","schedule":"*/5","disable":1,"fail_count":9},{"id":"101-0","guest":101,"schedule":"mon..fri 22:00","last_sync":0}]`))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1795946400, 0).UTC()
	want := map[int64][]snapshot.ReplicationJob{
		100: {{ID: "100-0", Target: "pve2", Schedule: "*/5", IntervalSeconds: 300, LastSync: &at, FailCount: 2, Error: "boom"}},
		101: {{ID: "101-0", Schedule: "mon..fri 22:00"}},
	}
	if got := replicationJobs(jobs); !reflect.DeepEqual(got, want) {
		t.Errorf("jobs %+v, want %+v", got, want)
	}
}

// TestScheduleInterval: the calendar events understood, and those not.
func TestScheduleInterval(t *testing.T) {
	for s, want := range map[string]int64{"*/15": 900, "*/1": 60, "*/59": 3540, "minutely": 60, "hourly": 3600, "daily": 86400,
		"weekly": 604800, "02:30": 86400, "*/0": 0, "*/60": 0, "*/x": 0, "sat 02:00": 0, "*/2:00": 0, "0/15": 0, "1,31": 0,
		"mon..fri": 0, "24:00": 0, "2:5": 0, "": 0} {
		if got := scheduleInterval(s); got != want {
			t.Errorf("%q: %d, want %d", s, got, want)
		}
	}
}

// FuzzReplication: any replication answer that decodes maps to guests
// the snapshot contract accepts.
func FuzzReplication(f *testing.F) {
	seedData(f, "nodes/pve1/replication.json", "nodes/pve2/replication.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		jobs, err := decodeList[replicationJob](data)
		if err != nil {
			return
		}
		var rs []snapshot.Resource
		for id, js := range replicationJobs(jobs) {
			rs = append(rs, snapshot.Resource{ID: "vm/" + strconv.FormatInt(id, 10), Kind: snapshot.KindVM, Replication: &snapshot.Replication{Jobs: js}})
		}
		valid(t, rs)
	})
}
