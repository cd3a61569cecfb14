package proxmox

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// TestSnapshotsReadOnRefresh: a source reads a guest's snapshots again
// once its copy is older than its share of source.proxmox.refresh (3/4
// to all of it) and reuses its last read (with its time) in between.
func TestSnapshotsReadOnRefresh(t *testing.T) {
	fake, srv := newFake(t)
	o := testOptions(t, srv)
	now := evalTime
	o.Now = func() time.Time { return now }
	s := newSource(t, o)
	reads := func() int {
		n := 0
		for _, p := range fake.requested() {
			if p == "nodes/pve1/qemu/102/snapshot" {
				n++
			}
		}
		return n
	}
	oldest := func() *snapshot.Snapshots {
		snap, _, err := s.Collect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range snap.Resources {
			if r.ID == "vm/102" && r.Guest != nil {
				return r.Guest.Snapshots
			}
		}
		return nil
	}
	at := time.Unix(1790000000, 0).UTC()
	want := &snapshot.Snapshots{Count: 2, Oldest: "pre-upgrade", OldestAt: &at, ReadAt: evalTime.UTC()}
	if got := oldest(); !reflect.DeepEqual(got, want) || reads() != 1 {
		t.Fatalf("first: %+v (%d reads), want %+v", got, reads(), want)
	}
	now = evalTime.Add(DefaultRefresh*3/4 - time.Minute)
	if got := oldest(); !reflect.DeepEqual(got, want) || reads() != 1 {
		t.Fatalf("within 3/4 of refresh: %+v (%d reads)", got, reads())
	}
	now = evalTime.Add(DefaultRefresh)
	want.ReadAt = now.UTC()
	if got := oldest(); !reflect.DeepEqual(got, want) || reads() != 2 {
		t.Fatalf("refresh on: %+v (%d reads)", got, reads())
	}
}

// TestSnapshotsDecodeNamesTheField: a snaptime that is no number is an
// error naming the entry and field.
func TestSnapshotsDecodeNamesTheField(t *testing.T) {
	_, err := decodeList[snapshotEntry]([]byte(`[{"name":"a","snaptime":1},{"name":"b","snaptime":2},{"name":"c","snaptime":true}]`))
	if err == nil || !strings.HasPrefix(err.Error(), "data[2].snaptime: must be a number") {
		t.Fatalf("error %v", err)
	}
}

// FuzzSnapshots: any snapshot list that decodes maps to a guest the
// snapshot contract accepts.
func FuzzSnapshots(f *testing.F) {
	seedData(f, "nodes/pve1/qemu/102/snapshot.json", "nodes/pve1/qemu/101/snapshot.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		list, err := decodeList[snapshotEntry](data)
		if err != nil {
			return
		}
		valid(t, []snapshot.Resource{{ID: "vm/1", Kind: snapshot.KindVM, Name: "g", Status: snapshot.StatusRunning,
			Guest: &snapshot.GuestState{Snapshots: snapshotsOf(list, evalTime)}}})
	})
}
