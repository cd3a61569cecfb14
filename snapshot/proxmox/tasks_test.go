package proxmox

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// recentTasks decodes a recent-tasks answer as readRecent does.
func recentTasks(t *testing.T, data string) []task {
	t.Helper()
	ts, err := decodeList[task]([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return newestFirst(ts)
}

func at(unix int64) *time.Time {
	v := time.Unix(unix, 0).UTC()
	return &v
}

// TestGuestTasks: a guest's lock and running task from the node's recent
// tasks, PVE 8 numbers and PVE 7 strings alike.
func TestGuestTasks(t *testing.T) {
	const list = `[{"upid":"U1","type":"qmstart","id":"100","user":"root@pam","starttime":1000,"endtime":1010,"status":"OK"},` +
		`{"upid":"U2","type":"vzdump","id":"","user":"root@pam","starttime":"2000"},` +
		`{"upid":"U3","type":"qmigrate","id":"101","user":"ops@pve","starttime":3000},` +
		`{"upid":"U4","type":"qmsnapshot","id":"100","user":"root@pam","starttime":"1500","endtime":"1600","status":"snapshot failed"}]`
	recent := recentTasks(t, list)
	start := &snapshot.Task{Type: "qmstart", UPID: "U1", User: "root@pam", StartedAt: *at(1000), EndedAt: at(1010), Status: "OK"}
	guest := func(id int64, lock string) clusterResource {
		return clusterResource{Type: "qemu", VMID: number{float64(id), true}, Node: "pve1", Lock: lock}
	}
	for _, c := range []struct {
		name string
		g    clusterResource
		read bool
		want *snapshot.GuestState
	}{
		{"unlocked, nothing running", guest(100, ""), true, &snapshot.GuestState{PowerTask: start, TasksRead: true}},
		{"locked, its newest task ended", guest(100, "snapshot"), true,
			&snapshot.GuestState{Lock: &snapshot.Lock{Name: "snapshot", Since: at(1600)}, PowerTask: start, TasksRead: true}},
		{"running its own task", guest(101, "migrate"), true,
			&snapshot.GuestState{Lock: &snapshot.Lock{Name: "migrate", Since: at(1000)},
				Task: &snapshot.Task{Type: "qmigrate", UPID: "U3", User: "ops@pve", StartedAt: *at(3000)}, TasksRead: true}},
		{"locked for backup while a backup job runs", guest(100, "backup"), true,
			&snapshot.GuestState{Lock: &snapshot.Lock{Name: "backup", Since: at(1600)},
				Task: &snapshot.Task{Type: "vzdump", UPID: "U2", User: "root@pam", StartedAt: *at(2000)}, PowerTask: start, TasksRead: true}},
		{"locked, no task of it listed", guest(102, "clone"), true,
			&snapshot.GuestState{Lock: &snapshot.Lock{Name: "clone", Since: at(1000)}, TasksRead: true}},
		{"tasks not read", guest(100, "backup"), false, &snapshot.GuestState{Lock: &snapshot.Lock{Name: "backup"}}},
	} {
		if got := guestTasks(c.g, recent, c.read, nil); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
	if got := guestTasks(guest(100, "backup"), nil, true, nil); !reflect.DeepEqual(got, &snapshot.GuestState{Lock: &snapshot.Lock{Name: "backup"}, TasksRead: true}) {
		t.Errorf("no task listed: %+v", got)
	}
	on, off := true, false
	for cfg, want := range map[string]*bool{`{"onboot":1}`: &on, `{"onboot":"1"}`: &on, `{"onboot":0}`: &off, `{"name":"x"}`: &off} {
		c, err := decodeGuestConfig([]byte(cfg))
		if err != nil {
			t.Fatal(err)
		}
		if got := guestTasks(guest(100, ""), nil, false, c); got == nil || !reflect.DeepEqual(got.OnBoot, want) {
			t.Errorf("config %s: %+v, want onboot %v", cfg, got, *want)
		}
	}
}

// TestRecentTasksNameTheField: a task of the wrong shape is an error
// naming its field.
func TestRecentTasksNameTheField(t *testing.T) {
	for data, want := range map[string]string{
		`[{"upid":"a"},{"upid":"b"},{"upid":3}]`: "data[2].upid: must be a string, got number",
		`[{"user":["root@pam"]}]`:                "data[0].user: must be a string, got array",
		`[{"starttime":true}]`:                   "data[0].starttime: must be a number, got true",
		`{"upid":"a"}`:                           "data: must be an array, got object",
	} {
		if _, err := decodeList[task]([]byte(data)); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", data, err, want)
		}
	}
}

// FuzzRecentTasks: any recent-tasks answer that decodes gives guests
// the snapshot contract accepts.
func FuzzRecentTasks(f *testing.F) {
	seedData(f, "nodes/pve1/tasks.json", "nodes/pve2/tasks.json")
	f.Add([]byte(`[{"upid":"U","type":"qmigrate","id":"100","starttime":"99999999999999"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, err := decodeList[task](data)
		if err != nil {
			return
		}
		ts = newestFirst(ts)
		var rs []snapshot.Resource
		for i, lock := range []string{"", "backup", "migrate", "suspended"} {
			id := int64(100 + i)
			g := clusterResource{Type: "qemu", VMID: number{float64(id), true}, Node: "pve1", Lock: lock, Status: "running"}
			r := snapshot.Resource{ID: "vm/" + strconv.FormatInt(id, 10), Kind: snapshot.KindVM, Status: snapshot.StatusRunning}
			r.Guest = guestTasks(g, ts, true, guestConfig{"onboot": "1"})
			rs = append(rs, r)
		}
		valid(t, rs)
	})
}
