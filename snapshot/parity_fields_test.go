package snapshot_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// TestHAAndReplicationFields: a guest's ha and replication decode whole;
// a replication job without id, with a negative count or interval drops
// its resource, naming the field.
func TestHAAndReplicationFields(t *testing.T) {
	doc := `{"version":1,"taken_at":"2026-11-29T10:00:00Z","resources":[` +
		`{"id":"vm/100","kind":"vm","ha":{"managed":true,"state":"error","requested":"started"},` +
		`"replication":{"jobs":[{"id":"100-0","target":"pve2","schedule":"*/15","interval_seconds":900,"last_sync":"2026-11-29T09:45:00Z","fail_count":2,"error":"no route"}]}},` +
		`{"id":"vm/101","kind":"vm","ha":{"managed":false},"replication":{"jobs":[]}},` +
		`{"id":"vm/102","kind":"vm","replication":{"jobs":[{"target":"pve2"}]}},` +
		`{"id":"vm/103","kind":"vm","replication":{"jobs":[{"id":"103-0","fail_count":-1}]}},` +
		`{"id":"vm/104","kind":"vm","replication":{"jobs":[{"id":"104-0","interval_seconds":-900}]}}]}`
	snap, probs, err := snapshot.Decode([]byte(doc), snapshot.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	synced := time.Date(2026, 11, 29, 9, 45, 0, 0, time.UTC)
	want := []snapshot.Resource{
		{ID: "vm/100", Kind: snapshot.KindVM, HA: &snapshot.HA{Managed: true, State: "error", Requested: "started"},
			Replication: &snapshot.Replication{Jobs: []snapshot.ReplicationJob{{ID: "100-0", Target: "pve2", Schedule: "*/15",
				IntervalSeconds: 900, LastSync: &synced, FailCount: 2, Error: "no route"}}}},
		{ID: "vm/101", Kind: snapshot.KindVM, HA: &snapshot.HA{}, Replication: &snapshot.Replication{Jobs: []snapshot.ReplicationJob{}}},
	}
	if !reflect.DeepEqual(snap.Resources, want) {
		t.Errorf("resources\n%+v\nwant\n%+v", snap.Resources, want)
	}
	var got []string
	for _, p := range probs {
		got = append(got, p.ID+" "+p.Field+": "+p.Problem)
	}
	wantProbs := []string{
		"vm/102 replication.jobs[0].id: required",
		"vm/103 replication.jobs[0].fail_count: negative",
		"vm/104 replication.jobs[0].interval_seconds: negative",
	}
	if !reflect.DeepEqual(got, wantProbs) {
		t.Errorf("problems\n%q\nwant\n%q", got, wantProbs)
	}
	// Encoded again, a guest without jobs still says it has none.
	data, err := snapshot.Encode(snap)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := snapshot.Decode(data, snapshot.DecodeOptions{})
	if err != nil || !reflect.DeepEqual(again.Resources, want) {
		t.Errorf("round trip: %v\n%s", err, data)
	}
}

// TestZFSScrubField: a pool's scrub decodes whole; an unknown state or
// negative errors drop the resource, naming the field.
func TestZFSScrubField(t *testing.T) {
	doc := `{"version":1,"taken_at":"2026-11-29T10:00:00Z","resources":[` +
		`{"id":"storage/n/zpool/a","kind":"storage","zfs":{"state":"ONLINE","scrub":{"state":"finished","at":"2026-11-08T00:28:13Z","repaired":"12K","errors":3}}},` +
		`{"id":"storage/n/zpool/b","kind":"storage","zfs":{"state":"ONLINE","scrub":{"state":"paused"}}},` +
		`{"id":"storage/n/zpool/c","kind":"storage","zfs":{"state":"ONLINE","scrub":{"state":"never","errors":-1}}}]}`
	snap, probs, err := snapshot.Decode([]byte(doc), snapshot.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 8, 0, 28, 13, 0, time.UTC)
	want := []snapshot.Resource{{ID: "storage/n/zpool/a", Kind: snapshot.KindStorage,
		ZFS: &snapshot.ZFS{State: "ONLINE", Scrub: &snapshot.Scrub{State: snapshot.ScrubFinished, At: &at, Repaired: "12K", Errors: 3}}}}
	if !reflect.DeepEqual(snap.Resources, want) {
		t.Errorf("resources\n%+v\nwant\n%+v", snap.Resources, want)
	}
	var got []string
	for _, p := range probs {
		got = append(got, p.ID+" "+p.Field+": "+p.Problem)
	}
	wantProbs := []string{
		`storage/n/zpool/b zfs.scrub.state: "paused" is not one of finished, running, never`,
		"storage/n/zpool/c zfs.scrub.errors: negative",
	}
	if !reflect.DeepEqual(got, wantProbs) {
		t.Errorf("problems\n%q\nwant\n%q", got, wantProbs)
	}
}
