package jsonref_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/jsonref"
)

// TestReferenceReadsEverySnapshotField: a document with every field of
// the snapshot set decodes into the reference with no field unknown, and
// encodes back to the same values.
func TestReferenceReadsEverySnapshotField(t *testing.T) {
	at := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	i64 := func(v int64) *int64 { return &v }
	yes := true
	doc := &snapshot.Snapshot{Version: 1, TakenAt: at, Source: "s", Resources: []snapshot.Resource{{
		ID: "vm/1", Kind: snapshot.KindVM, Name: "n", Parent: "node/a", Parents: []string{"storage/a/x"}, Status: "running",
		Tags: []string{"t"}, Labels: map[string]string{"k": "v"}, Metrics: snapshot.Metrics{{Name: "cpu_percent", Value: 5}},
		Addresses: []string{"a:1"}, Reachable: &yes,
		Backup:      &snapshot.Backup{LastStatus: "ok", LastFinishedAt: &at, LastSuccessAt: &at, LastError: "e", Storage: "storage/a/b"},
		Smart:       &snapshot.Smart{Health: "PASSED", ReallocatedSectors: 1, PendingSectors: 1, OfflineUncorrectable: 1, UDMACRCErrors: 1, MediaErrors: 1, WearoutPercent: i64(1), TemperatureC: i64(1), NVMeCriticalWarning: 1, GrownDefects: 1},
		ZFS:         &snapshot.ZFS{State: "ONLINE", ReadErrors: 1, WriteErrors: 1, ChecksumErrors: 1},
		BackupStore: &snapshot.BackupStore{Jobs: []snapshot.Job{{ID: "j", Type: "gc", LastStatus: "ok", LastFinishedAt: &at, LastError: "e"}}, VerifyFailed: []string{"x"}},
		Notes:       "n", Logs: []string{"l"},
	}}}
	data, err := snapshot.Encode(doc)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var ref jsonref.Snapshot
	if err := dec.Decode(&ref); err != nil {
		t.Fatal(err)
	}
	back, err := json.Marshal(ref)
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal(back, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the reference encodes\n%s\nthe snapshot\n%s", back, data)
	}
}
