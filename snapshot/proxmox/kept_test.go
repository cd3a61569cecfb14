package proxmox

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
	"github.com/patrold/patrold/store"
)

// guestReads are the requests of one run that read a guest (config,
// snapshot list, agent), by path.
func guestReads(pve *pvetest.Scale) map[string]int {
	out := map[string]int{}
	for p, n := range pve.ByPath() {
		if seg := strings.Split(p, "/"); len(seg) >= 5 && (seg[2] == "qemu" || seg[2] == "lxc") {
			out[p] = n
		}
	}
	return out
}

// keptSource is a source over pve on a clock the test moves.
func keptSource(t *testing.T, pve *pvetest.Scale, now *time.Time, keeper Keeper) *Source {
	t.Helper()
	o := scaleOptions(t, pve)
	o.Now = func() time.Time { return *now }
	o.Keeper, o.Rate = keeper, 1000
	return newSource(t, o)
}

// collectOK collects and fails on any problem.
func collectOK(t *testing.T, src *Source) *snapshot.Snapshot {
	t.Helper()
	snap, problems, err := src.Collect(context.Background())
	if err != nil || len(problems) != 0 {
		t.Fatalf("collect: err %v, problems %+v", err, problems)
	}
	return snap
}

// TestKeptChangedGuestIsReadAgain: after a first run reads every guest,
// the next run reads again exactly the guests that moved, restarted,
// changed status or lock, or are new, and a run after it none. No guest
// has a snapshot: no snapshot list is read.
func TestKeptChangedGuestIsReadAgain(t *testing.T) {
	pve := pvetest.NewScale(t, 2, 4, 0) // pve1: 100-103, pve2: 104-107; even ids VMs
	now := evalTime
	src := keptSource(t, pve, &now, nil)
	collectOK(t, src)
	first := guestReads(pve)
	if len(first) != 8+4 {
		t.Fatalf("first run read %d guest paths, want 12: %v", len(first), first)
	}

	pve.Reset()
	now = now.Add(time.Minute)
	pve.Guest(100, func(g *pvetest.Guest) { g.Node = "pve2" })                                  // moved
	pve.Guest(102, func(g *pvetest.Guest) { g.Uptime = 30 })                                    // restarted
	pve.Guest(103, func(g *pvetest.Guest) { g.Status, g.Uptime = "stopped", 0 })                // stopped
	pve.Guest(105, func(g *pvetest.Guest) { g.Lock = "backup" })                                // locked
	pve.Guest(104, func(g *pvetest.Guest) { g.Uptime, g.Rev = 86400+60, 1 })                    // unchanged but for uptime
	pve.Add(pvetest.Guest{VMID: 200, Type: "qemu", Node: "pve1", Status: "running", Uptime: 5}) // new
	pve.Guest(101, func(g *pvetest.Guest) { g.Uptime = 86400 + 60 })
	collectOK(t, src)
	want := map[string]int{
		"nodes/pve2/qemu/100/config": 1, "nodes/pve2/qemu/100/agent/network-get-interfaces": 1,
		"nodes/pve1/qemu/102/config": 1, "nodes/pve1/qemu/102/agent/network-get-interfaces": 1,
		"nodes/pve1/lxc/103/config":  1,
		"nodes/pve2/lxc/105/config":  1,
		"nodes/pve1/qemu/200/config": 1, "nodes/pve1/qemu/200/agent/network-get-interfaces": 1,
	}
	if got := guestReads(pve); !maps.Equal(got, want) {
		t.Errorf("second run read %v\nwant %v", got, want)
	}

	pve.Reset()
	now = now.Add(time.Minute)
	collectOK(t, src)
	if got := guestReads(pve); len(got) != 0 {
		t.Errorf("third run, nothing changed, read %v", got)
	}
}

// TestKeptRefresh: a copy is read again once older than its share of
// source.proxmox.refresh (3/4 to all of it), and not before.
func TestKeptRefresh(t *testing.T) {
	pve := pvetest.NewScale(t, 1, 2, 0)
	pve.Guest(100, func(g *pvetest.Guest) { g.SnapshotAt = evalTime.Add(-time.Hour).Unix() })
	now := evalTime
	src := keptSource(t, pve, &now, nil)
	collectOK(t, src)
	pve.Reset()
	now = evalTime.Add(DefaultRefresh*3/4 - time.Second)
	collectOK(t, src)
	if got := guestReads(pve); len(got) != 0 {
		t.Errorf("at 3/4 of refresh: read %v", got)
	}
	now = evalTime.Add(DefaultRefresh)
	collectOK(t, src)
	want := map[string]int{"nodes/pve1/qemu/100/config": 1, "nodes/pve1/qemu/100/snapshot": 1, "nodes/pve1/qemu/100/agent/network-get-interfaces": 1,
		"nodes/pve1/lxc/101/config": 1}
	if got := guestReads(pve); !maps.Equal(got, want) {
		t.Errorf("at refresh: read %v, want %v", got, want)
	}
}

// TestKeptDigestChangeRereadsConfig: a snapshot list read again whose
// config digest differs from the kept config's reads the config again.
func TestKeptDigestChangeRereadsConfig(t *testing.T) {
	pve := pvetest.NewScale(t, 1, 2, 0)
	for _, id := range []int{100, 101} {
		pve.Guest(id, func(g *pvetest.Guest) { g.SnapshotAt = evalTime.Add(-time.Hour).Unix() })
	}
	now := evalTime
	src := keptSource(t, pve, &now, nil)
	collectOK(t, src)
	// Find a guest whose snapshot list is due before its config.
	var g clusterResource
	var at time.Duration
	for _, c := range []clusterResource{{Type: "qemu", VMID: number{100, true}}, {Type: "lxc", VMID: number{101, true}}} {
		if s, cf := src.refreshOf(keptKey(c, partSnapshots)), src.refreshOf(keptKey(c, partConfig)); s < cf {
			g, at = c, s
		}
	}
	if at == 0 {
		t.Skip("no guest's snapshot list is due before its config")
	}
	id := int(vmid(g))
	pve.Guest(id, func(x *pvetest.Guest) { x.Rev = 1 })
	pve.Reset()
	now = evalTime.Add(at)
	collectOK(t, src)
	base := "nodes/pve1/" + g.Type + "/" + strconv.Itoa(id)
	want := map[string]int{base + "/snapshot": 1, base + "/config": 1}
	got := map[string]int{}
	for p, n := range guestReads(pve) {
		if strings.HasPrefix(p, base+"/") {
			got[p] = n
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("read %v, want %v", got, want)
	}
}

// resourceOf is the resource id of snap; the test fails without it.
func resourceOf(t *testing.T, snap *snapshot.Snapshot, id string) snapshot.Resource {
	t.Helper()
	for _, r := range snap.Resources {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no resource %s", id)
	return snapshot.Resource{}
}

// TestKeptStaleCopyMarked: a guest to be read again whose config and
// agent reads fail keeps the last good copies (its storage parent and
// addresses), and each failure says the copy is stale.
func TestKeptStaleCopyMarked(t *testing.T) {
	pve := pvetest.NewScale(t, 1, 2, 0)
	now := evalTime
	src := keptSource(t, pve, &now, nil)
	before := resourceOf(t, collectOK(t, src), "vm/100")

	now = evalTime.Add(time.Minute)
	pve.Fail("nodes/pve1/qemu/100/config", http.StatusInternalServerError)
	pve.Fail("nodes/pve1/qemu/100/agent/network-get-interfaces", 596)
	pve.Guest(100, func(g *pvetest.Guest) { g.Uptime = 20 }) // restarted: read again
	snap, problems, err := src.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []snapshot.Problem{
		{ID: "node/pve1", Index: -1, Field: "GET /nodes/pve1/qemu/100/config", Warning: true,
			Problem: "node pve1: HTTP 500 Internal Server Error; the copy read at 2026-11-29T10:00:00Z is used (stale)"},
		{ID: "node/pve1", Index: -1, Field: "GET /nodes/pve1/qemu/100/agent/network-get-interfaces", Warning: true,
			Problem: "node pve1: HTTP 596 status code 596; the addresses of the copy read at 2026-11-29T10:00:00Z are used (stale)"},
	}
	if !reflect.DeepEqual(problems, want) {
		t.Errorf("problems\n%+v\nwant\n%+v", problems, want)
	}
	after := resourceOf(t, snap, "vm/100")
	if !reflect.DeepEqual(after.Parents, before.Parents) || !reflect.DeepEqual(after.Addresses, before.Addresses) || len(after.Addresses) == 0 {
		t.Errorf("with stale copies: parents %v addresses %v, want %v %v", after.Parents, after.Addresses, before.Parents, before.Addresses)
	}
}

// TestKeptSurvivesRestart: a source built again on the same store reads
// no guest again, and collects the same snapshot.
func TestKeptSurvivesRestart(t *testing.T) {
	pve := pvetest.NewScale(t, 2, 3, 0)
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "patrold.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := evalTime
	first := collectOK(t, keptSource(t, pve, &now, st))
	pve.Reset()
	now = evalTime.Add(time.Minute)
	again := collectOK(t, keptSource(t, pve, &now, st))
	if got := guestReads(pve); len(got) != 0 {
		t.Errorf("after a restart read %v", got)
	}
	again.TakenAt = first.TakenAt
	if !reflect.DeepEqual(again, first) {
		t.Errorf("after a restart the snapshot differs:\n%+v\nwant\n%+v", again, first)
	}
}

// rowsKeeper keeps copies in memory as the store keeps its rows.
type rowsKeeper struct {
	mu   sync.Mutex
	rows map[string][]byte
}

func (k *rowsKeeper) KeptCopies(_ context.Context, _ string) (map[string][]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return maps.Clone(k.rows), nil
}

func (k *rowsKeeper) KeepCopies(_ context.Context, _ string, copies map[string][]byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.rows == nil {
		k.rows = map[string][]byte{}
	}
	for key, v := range copies {
		if v == nil {
			delete(k.rows, key)
		} else {
			k.rows[key] = v
		}
	}
	return nil
}

// TestKeptUndecodableCopyReadAgain: a kept row that does not decode (a
// field of the wrong type, a missing one, not JSON) is dropped: a source
// built on it reads that part again and nothing else, and collects the
// snapshot of a clean start.
func TestKeptUndecodableCopyReadAgain(t *testing.T) {
	pve := pvetest.NewScale(t, 1, 4, 0) // 100, 102 VMs; 101, 103 containers
	pve.Guest(101, func(g *pvetest.Guest) { g.SnapshotAt = evalTime.Add(-time.Hour).Unix() })
	keeper := &rowsKeeper{}
	now := evalTime
	first := collectOK(t, keptSource(t, pve, &now, keeper))
	keeper.rows["qemu/100/config"] = []byte(`{"node":"pve1","status":"running","lock":"","uptime":"86400","read_at":"2026-11-29T10:00:00Z","data":{}}`)
	keeper.rows["lxc/101/snapshot"] = []byte(`{"node":"pve1","status":"running","uptime":86400,"data":[]}`)
	keeper.rows["qemu/102/agent"] = []byte(`{"node":"pve1"`)
	pve.Reset()
	now = evalTime.Add(time.Minute)
	again := collectOK(t, keptSource(t, pve, &now, keeper))
	want := map[string]int{"nodes/pve1/qemu/100/config": 1, "nodes/pve1/lxc/101/snapshot": 1, "nodes/pve1/qemu/102/agent/network-get-interfaces": 1}
	if got := guestReads(pve); !maps.Equal(got, want) {
		t.Errorf("read %v, want %v", got, want)
	}
	again.TakenAt = first.TakenAt
	// The snapshot list read again is dated by its new read, and so is
	// the none that the config read again says.
	for _, id := range []string{"container/101", "vm/100"} {
		resourceOf(t, first, id).Guest.Snapshots.ReadAt = now
	}
	if !reflect.DeepEqual(again, first) {
		t.Errorf("snapshot over dropped copies differs:\n%+v\nwant\n%+v", again, first)
	}
	for key, row := range keeper.rows {
		if _, err := decodeKept(row); err != nil {
			t.Errorf("%s is kept again as %s: %v", key, row, err)
		}
	}
}

// TestDecodeKept: a kept row decodes whole, or fails naming its field.
func TestDecodeKept(t *testing.T) {
	const ok = `{"node":"pve1","status":"running","lock":"backup","uptime":86400,"read_at":"2026-11-29T10:00:00Z","data":{"cores":4}}`
	c, err := decodeKept([]byte(ok))
	want := &keptCopy{Node: "pve1", Status: "running", Lock: "backup", Uptime: 86400, ReadAt: evalTime, Data: json.RawMessage(`{"cores":4}`)}
	if err != nil || !reflect.DeepEqual(c, want) {
		t.Errorf("decodeKept(%s) = %+v, %v; want %+v", ok, c, err, want)
	}
	for _, tc := range []struct{ row, want string }{
		{`[]`, "must be an object, got array"},
		{`{"node":"pve1"`, "not valid JSON at byte 14: unexpected end of JSON input"},
		{`{"read_at":"2026-11-29T10:00:00Z","data":null}`, "node: required"},
		{`{"node":"","read_at":"2026-11-29T10:00:00Z","data":null}`, "node: must not be empty"},
		{`{"node":7,"read_at":"2026-11-29T10:00:00Z","data":null}`, "node: must be a string, got number"},
		{`{"node":"pve1","uptime":"86400","read_at":"2026-11-29T10:00:00Z","data":null}`, "uptime: must be a number, got string"},
		{`{"node":"pve1","data":null}`, "read_at: required"},
		{`{"node":"pve1","read_at":"yesterday","data":null}`, `read_at: parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"`},
		{`{"node":"pve1","read_at":"0001-01-01T00:00:00Z","data":null}`, "read_at: must not be zero"},
		{`{"node":"pve1","read_at":"2026-11-29T10:00:00Z"}`, "data: required"},
	} {
		if c, err := decodeKept([]byte(tc.row)); err == nil || err.Error() != tc.want {
			t.Errorf("decodeKept(%s) = %+v, %v; want error %q", tc.row, c, err, tc.want)
		}
	}
}

// TestKeptSnapshotListOnlyWithParent: a guest's snapshot list is read
// only while its config names a parent snapshot, or the list kept held
// snapshots; a config without one says the guest has none. A snapshot
// taken or deleted is seen at the next run through its task.
func TestKeptSnapshotListOnlyWithParent(t *testing.T) {
	pve := pvetest.NewScale(t, 1, 2, 0) // 100 a VM, 101 a container
	taken := evalTime.Add(-30 * 24 * time.Hour)
	pve.Guest(100, func(g *pvetest.Guest) { g.SnapshotAt = taken.Unix() })
	now := evalTime
	src := keptSource(t, pve, &now, nil)
	snap := collectOK(t, src)
	want := map[string]int{"nodes/pve1/qemu/100/config": 1, "nodes/pve1/qemu/100/snapshot": 1,
		"nodes/pve1/qemu/100/agent/network-get-interfaces": 1, "nodes/pve1/lxc/101/config": 1}
	if got := guestReads(pve); !maps.Equal(got, want) {
		t.Errorf("first run read %v\nwant %v", got, want)
	}
	wantSnaps := func(id string, want *snapshot.Snapshots) {
		t.Helper()
		r := resourceOf(t, snap, id)
		if r.Guest == nil {
			t.Fatalf("%s: no guest state", id)
		}
		if got := r.Guest.Snapshots; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: snapshots %+v, want %+v", id, got, want)
		}
	}
	takenAt := taken.UTC()
	wantSnaps("vm/100", &snapshot.Snapshots{Count: 1, Oldest: "before-upgrade", OldestAt: &takenAt, ReadAt: evalTime})
	wantSnaps("container/101", &snapshot.Snapshots{ReadAt: evalTime})

	// A snapshot of 101 is taken, one of 100 deleted: each shows in a task.
	pve.Reset()
	now = evalTime.Add(10 * time.Minute)
	taken = evalTime.Add(5 * time.Minute)
	pve.Guest(101, func(g *pvetest.Guest) { g.SnapshotAt = taken.Unix() })
	pve.AddTask("pve1", 101, "vzsnapshot", taken.Unix())
	pve.Guest(100, func(g *pvetest.Guest) { g.SnapshotAt = 0 })
	pve.AddTask("pve1", 100, "qmdelsnapshot", taken.Unix())
	snap = collectOK(t, src)
	want = map[string]int{"nodes/pve1/lxc/101/config": 1, "nodes/pve1/lxc/101/snapshot": 1,
		"nodes/pve1/qemu/100/config": 1, "nodes/pve1/qemu/100/snapshot": 1, "nodes/pve1/qemu/100/agent/network-get-interfaces": 1}
	if got := guestReads(pve); !maps.Equal(got, want) {
		t.Errorf("after the snapshot tasks read %v\nwant %v", got, want)
	}
	takenAt = taken.UTC()
	wantSnaps("container/101", &snapshot.Snapshots{Count: 1, Oldest: "before-upgrade", OldestAt: &takenAt, ReadAt: now})
	wantSnaps("vm/100", &snapshot.Snapshots{ReadAt: now})

	pve.Reset()
	now = now.Add(10 * time.Minute)
	collectOK(t, src)
	if got := guestReads(pve); len(got) != 0 {
		t.Errorf("third run, nothing changed, read %v", got)
	}
}

// TestKeptTaskRereads: a task of a guest since its copies were read
// reads them again, unless the task cannot change them (a backup, a
// console); a task that ended before the read does not. A task list
// that is full and starts after the copies were read says nothing of
// what came before: every guest of that node is read again.
func TestKeptTaskRereads(t *testing.T) {
	pve := pvetest.NewScale(t, 2, 2, 0) // pve1: 100 VM, 101 CT; pve2: 102 VM, 103 CT
	now := evalTime
	src := keptSource(t, pve, &now, nil)
	collectOK(t, src)

	pve.Reset()
	now = evalTime.Add(10 * time.Minute)
	after := evalTime.Add(2 * time.Minute).Unix()
	pve.AddTask("pve1", 100, "qmconfig", after)
	pve.AddTask("pve1", 101, "vzdump", after)
	pve.AddTask("pve2", 102, "vncproxy", after)
	pve.AddTask("pve2", 103, "move_volume", evalTime.Add(-5*time.Minute).Unix()) // ended before the read
	collectOK(t, src)
	want := map[string]int{"nodes/pve1/qemu/100/config": 1, "nodes/pve1/qemu/100/agent/network-get-interfaces": 1}
	if got := guestReads(pve); !maps.Equal(got, want) {
		t.Errorf("after the tasks read %v\nwant %v", got, want)
	}

	pve.Reset()
	now = now.Add(10 * time.Minute)
	for i := range recentLimit {
		pve.AddTask("pve2", 102, "vncproxy", now.Add(-time.Duration(i+1)*time.Second).Unix())
	}
	collectOK(t, src)
	want = map[string]int{"nodes/pve2/qemu/102/config": 1, "nodes/pve2/qemu/102/agent/network-get-interfaces": 1,
		"nodes/pve2/lxc/103/config": 1}
	if got := guestReads(pve); !maps.Equal(got, want) {
		t.Errorf("after a full task list read %v\nwant %v", got, want)
	}
}
