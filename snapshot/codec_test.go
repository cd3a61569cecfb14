package snapshot_test

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/snapshot"
)

func TestDocumentRejected(t *testing.T) {
	cases := map[string]string{
		`not json`:                                                 "not valid JSON",
		`{"resources": []}`:                                        "version: required",
		`{"version": 2, "resources": []}`:                          "version: must be 1, got 2",
		`{"version": "1", "resources": []}`:                        `version: must be 1, got "1"`,
		`{"version": 1}`:                                           "resources: required array is missing",
		`{"version": 1, "resources": null}`:                        "resources: required array is missing",
		`{"version": 1, "resources": {}}`:                          "resources: must be an array",
		`{"version": 1, "taken_at": "yesterday", "resources": []}`: `taken_at: not an RFC 3339 time: "yesterday"`,
		`[]`: "must be an object",
	}
	for in, want := range cases {
		_, _, err := snapshot.Decode([]byte(in), snapshot.DecodeOptions{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", in, err, want)
		}
		if err != nil && !errors.Is(err, snapshot.ErrInvalidDocument) {
			t.Errorf("%s: error is not ErrInvalidDocument", in)
		}
	}
}

func TestResourcesDropped(t *testing.T) {
	doc := `{"version":1,"taken_at":"2026-11-29T06:00:00Z","resources":[
	 {"id":"node/a","kind":"node","metrics":{"cpu_percent":50}},
	 {"kind":"node"},
	 {"id":"node/b","kind":"switch"},
	 {"id":"vm/9","kind":"vm","metrics":{"cpu_percent":101}},
	 {"id":"vm/10","kind":"vm","metrics":{"cpu_percent":"high"}},
	 {"id":"vm/11","kind":"vm","metrics":{"memory_percent":null}},
	 {"id":"vm/12","kind":"vm","backup":{"last_success_at":"last week"}},
	 {"id":"vm/13","kind":"vm","tags":"prod"},
	 {"id":"vm/dup","kind":"vm"},
	 {"id":"vm/dup","kind":"vm"},
	 {"id":"disk/x","kind":"disk","smart":{"pending_sectors":-1}},
	 {"id":"vm/14","kind":"vm","metrics":{"window_seconds":900,"cpu_percent_avg":99.5}},
	 {"id":" VM/15 ","kind":"VM"}
	]}`
	snap, probs, err := snapshot.Decode([]byte(doc), snapshot.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, r := range snap.Resources {
		kept = append(kept, r.ID)
	}
	if strings.Join(kept, ",") != "node/a,vm/14,vm/15" {
		t.Errorf("kept %v", kept)
	}
	want := []string{
		"resources[1]: id: required",
		"node/b: kind: unknown kind",
		"vm/9: metrics.cpu_percent: outside 0..100",
		"vm/10: metrics.cpu_percent: must be a number",
		"vm/11: metrics.memory_percent: not a number",
		"vm/12: backup.last_success_at: not an RFC 3339 time",
		"vm/13: tags: must be an array",
		"vm/dup: id: duplicate id",
		"vm/dup: id: duplicate id",
		"disk/x: smart.pending_sectors: negative",
	}
	if len(probs) != len(want) {
		t.Errorf("got %d problems: %v", len(probs), probs)
	}
	for _, w := range want {
		found := false
		for _, p := range probs {
			if strings.HasPrefix(p.String(), w) {
				found = true
			}
		}
		if !found {
			t.Errorf("missing problem %q in %v", w, probs)
		}
	}
	if probs[0].Index != 1 {
		t.Errorf("index of the id-less resource: %d", probs[0].Index)
	}
}

func TestStrictWarnings(t *testing.T) {
	doc := `{"version":1,"extra":1,"resources":[{"id":"vm/1","kind":"vm","status":"zombie","colour":"red","addresses":["nope"],"backup":{"last_status":"meh"}}]}`
	snap, probs, err := snapshot.Decode([]byte(doc), snapshot.DecodeOptions{Strict: true})
	if err != nil || len(snap.Resources) != 1 {
		t.Fatalf("strict mode dropped something: %v %v", err, snap)
	}
	joined := ""
	for _, p := range probs {
		if !p.Warning {
			t.Errorf("strict finding is not a warning: %v", p)
		}
		joined += p.String() + "\n"
	}
	for _, w := range []string{"extra: unknown field", "colour: unknown field", "status: unrecognised status", "addresses[0]", "backup.last_status"} {
		if !strings.Contains(joined, w) {
			t.Errorf("missing warning %q in\n%s", w, joined)
		}
	}
	_, probs, _ = snapshot.Decode([]byte(doc), snapshot.DecodeOptions{})
	if len(probs) != 0 {
		t.Errorf("non-strict mode reported %v", probs)
	}
}

func TestExamplesDecode(t *testing.T) {
	for _, name := range []string{"small-healthy.json", "small-faults.json"} {
		data, err := os.ReadFile("../examples/" + name)
		if err != nil {
			t.Fatal(err)
		}
		snap, probs, err := snapshot.Decode(data, snapshot.DecodeOptions{Strict: true})
		if err != nil || len(probs) != 0 || len(snap.Resources) != 9 {
			t.Errorf("%s: %v %v %d", name, err, probs, len(snap.Resources))
		}
	}
}

func TestRoundTrip(t *testing.T) {
	data, _ := os.ReadFile("../examples/small-faults.json")
	a, _, _ := snapshot.Decode(data, snapshot.DecodeOptions{})
	out, err := snapshot.Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	b, probs, err := snapshot.Decode(out, snapshot.DecodeOptions{Strict: true})
	if err != nil || len(probs) != 0 {
		t.Fatal(err, probs)
	}
	out2, _ := snapshot.Encode(b)
	if string(out) != string(out2) {
		t.Fatal("encode/decode is not stable")
	}
}

func TestGlob(t *testing.T) {
	cases := []struct {
		p, id string
		ok    bool
	}{
		{"vm/1*", "vm/101", true}, {"vm/1*", "vm/201", false}, {"storage/*", "storage/pve1/local", true},
		{"*", "anything/at/all", true}, {"vm/?01", "vm/101", true}, {"vm/?01", "vm/1001", false},
		{"*/pve1/*", "disk/pve1/sda", true}, {"disk/*/sda", "disk/pve2/sdb", false}, {"vm/101", "vm/101", true},
	}
	for _, c := range cases {
		if snapshot.Glob(c.p, c.id) != c.ok {
			t.Errorf("Glob(%q, %q) != %v", c.p, c.id, c.ok)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, name := range []string{"small-healthy.json", "small-faults.json"} {
		data, _ := os.ReadFile("../examples/" + name)
		f.Add(data, true)
	}
	f.Add([]byte(`{"version":1,"resources":[{"id":"a","kind":"vm","metrics":{"cpu_percent":1e308}}]}`), false)
	f.Add([]byte(`{"version":1,"resources":[{"id":"a","kind":"disk","smart":{"wearout_percent":101}},{"id":"a"}]}`), true)
	f.Add([]byte(`{"version":1,"resources":[{"id":"--all","kind":"vm"},{"id":"/1","kind":"vm"},{"id":"vm/ ","kind":"vm"},{"id":"vm/-rf","kind":"vm"},{"id":"VM/1","kind":"vm"}]}`), false)
	f.Fuzz(func(t *testing.T, data []byte, strict bool) {
		snap, probs, err := snapshot.Decode(data, snapshot.DecodeOptions{Strict: strict})
		if err != nil {
			if snap != nil || !errors.Is(err, snapshot.ErrInvalidDocument) {
				t.Fatalf("rejected document returned %v, %v", snap, err)
			}
			return
		}
		seen := map[string]bool{}
		for _, r := range snap.Resources {
			kind, name, slash := strings.Cut(r.ID, "/")
			if r.ID == "" || !r.Kind.Valid() || seen[r.ID] || !slash || kind == "" || name == "" ||
				snapshot.IDProblem(r.ID) != "" || strings.HasPrefix(r.ID, "-") || strings.Contains(r.ID, "/-") {
				t.Fatalf("invalid resource kept: %+v", r)
			}
			seen[r.ID] = true
			for name, v := range r.Metrics.All() {
				if strings.HasSuffix(name, "_percent") && (v < 0 || v > 100) {
					t.Fatalf("metric %s=%v kept", name, v)
				}
			}
		}
		for _, p := range probs {
			if p.Field == "" || p.Problem == "" {
				t.Fatalf("problem without field: %+v", p)
			}
		}
	})
}

// TestDiskAndPoolFields decodes the NVMe, SAS and ZFS pool fields into
// whole values, and names the field of each bad one.
func TestDiskAndPoolFields(t *testing.T) {
	doc := `{"version":1,"resources":[
	 {"id":"disk/n/nvme0n1","kind":"disk","smart":{"health":"PASSED","nvme_critical_warning":5,"wearout_percent":8,"temperature_c":71}},
	 {"id":"disk/n/sdb","kind":"disk","smart":{"grown_defects":14}},
	 {"id":"storage/n/zpool/rpool","kind":"storage","status":"online","zfs":{"state":"DEGRADED","read_errors":1,"write_errors":2,"checksum_errors":3}},
	 {"id":"disk/n/sdc","kind":"disk","smart":{"nvme_critical_warning":-1}},
	 {"id":"disk/n/sdd","kind":"disk","smart":{"grown_defects":-3}},
	 {"id":"storage/n/zpool/tank","kind":"storage","zfs":{"checksum_errors":-1}},
	 {"id":"storage/n/zpool/bad","kind":"storage","zfs":{"state":7}}
	]}`
	snap, probs, err := snapshot.Decode([]byte(doc), snapshot.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	i64 := func(v int64) *int64 { return &v }
	want := []snapshot.Resource{
		{ID: "disk/n/nvme0n1", Kind: snapshot.KindDisk, Smart: &snapshot.Smart{Health: "PASSED", NVMeCriticalWarning: 5, WearoutPercent: i64(8), TemperatureC: i64(71)}},
		{ID: "disk/n/sdb", Kind: snapshot.KindDisk, Smart: &snapshot.Smart{GrownDefects: 14}},
		{ID: "storage/n/zpool/rpool", Kind: snapshot.KindStorage, Status: "online", ZFS: &snapshot.ZFS{State: "DEGRADED", ReadErrors: 1, WriteErrors: 2, ChecksumErrors: 3}},
	}
	if !reflect.DeepEqual(snap.Resources, want) {
		t.Errorf("resources\n%+v\nwant\n%+v", snap.Resources, want)
	}
	var got []string
	for _, p := range probs {
		got = append(got, p.ID+" "+p.Field+": "+p.Problem)
	}
	wantProbs := []string{
		"disk/n/sdc smart.nvme_critical_warning: negative",
		"disk/n/sdd smart.grown_defects: negative",
		"storage/n/zpool/tank zfs.checksum_errors: negative",
		"storage/n/zpool/bad zfs.state: must be a string, got number",
	}
	if !reflect.DeepEqual(got, wantProbs) {
		t.Errorf("problems\n%q\nwant\n%q", got, wantProbs)
	}
}

// TestBackupStoreField: a datastore's jobs and failed verifications
// decode whole (the streaming decoder hands the resource to the
// reference one), and a job without id or of an unknown type drops it.
func TestBackupStoreField(t *testing.T) {
	doc := `{"version":1,"resources":[
{"id":"storage/pbs1/store1","kind":"storage","status":"online","metrics":{"usage_percent":50},
 "backup_store":{"jobs":[{"id":"v-1","type":"verify","last_status":"failed","last_error":"verification failed","last_finished_at":"2026-11-30T02:00:00Z"},
  {"id":"store1","type":"gc","last_status":"ok"}],"verify_failed":["vm/100/2026-11-30T02:00:00Z"]}},
{"id":"storage/pbs1/store2","kind":"storage","backup_store":{"jobs":[{"id":" ","type":"verify"}]}},
{"id":"storage/pbs1/store3","kind":"storage","backup_store":{"jobs":[{"id":"x","type":"backup"}]}}]}`
	snap, problems, err := snapshot.Decode([]byte(doc), snapshot.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	want := []snapshot.Resource{{ID: "storage/pbs1/store1", Kind: snapshot.KindStorage, Status: "online", Metrics: snapshot.Metrics{{Name: "usage_percent", Value: 50}},
		BackupStore: &snapshot.BackupStore{Jobs: []snapshot.Job{{ID: "v-1", Type: "verify", LastStatus: snapshot.BackupFailed, LastError: "verification failed", LastFinishedAt: &at},
			{ID: "store1", Type: "gc", LastStatus: snapshot.BackupOK}}, VerifyFailed: []string{"vm/100/2026-11-30T02:00:00Z"}}}}
	if !reflect.DeepEqual(snap.Resources, want) {
		t.Fatalf("resources:\n got %+v\nwant %+v", snap.Resources, want)
	}
	wantProblems := []snapshot.Problem{
		{ID: "storage/pbs1/store2", Index: 1, Field: "backup_store.jobs[0].id", Problem: "required"},
		{ID: "storage/pbs1/store3", Index: 2, Field: "backup_store.jobs[0].type", Problem: `"backup" is not one of verify, prune, gc, sync`},
	}
	if !reflect.DeepEqual(problems, wantProblems) {
		t.Fatalf("problems:\n got %+v\nwant %+v", problems, wantProblems)
	}
}

// TestUnreadableResourceNamesItsField: a resource that cannot be read is
// dropped with a problem naming its first bad field in document order,
// by its path and its own name however the document cased it (what the
// document named escaped), and the id wherever it stands in the resource.
func TestUnreadableResourceNamesItsField(t *testing.T) {
	doc := `{"version":1,"resources":[
	 {"id":"vm/1","kind":"vm","metrics":{"b":"x","a":true}},
	 {"id":"vm/2","kind":"vm","metrics":{"a":1e400}},
	 {"id":"vm/3","kind":"vm","addresses":["a:1",true]},
	 {"id":"vm/4","kind":"vm","labels":{"site":5}},
	 {"id":"vm/4b","kind":"vm","labels":{"a\u001b[2J":5}},
	 {"TAGS":5,"id":"vm/5","kind":"vm"},
	 {"id":"vm/6","kind":"vm","backup":{"last_success_at":5}},
	 {"id":"storage/7","kind":"storage","backup_store":{"jobs":[{"id":"j","type":"gc","last_finished_at":"soon"}]}},
	 {"id":"disk/8","kind":"disk","smart":{"pending_sectors":1.5}},
	 5]}`
	_, probs, err := snapshot.Decode([]byte(doc), snapshot.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []snapshot.Problem{
		{ID: "vm/1", Index: 0, Field: "metrics.b", Problem: "must be a number, got string"},
		{ID: "vm/2", Index: 1, Field: "metrics.a", Problem: "must be a number, got number 1e400"},
		{ID: "vm/3", Index: 2, Field: "addresses[1]", Problem: "must be a string, got bool"},
		{ID: "vm/4", Index: 3, Field: "labels.site", Problem: "must be a string, got number"},
		{ID: "vm/4b", Index: 4, Field: `labels.a\x1b[2J`, Problem: "must be a string, got number"},
		{ID: "vm/5", Index: 5, Field: "tags", Problem: "must be an array, got number"},
		{ID: "vm/6", Index: 6, Field: "backup.last_success_at", Problem: "not an RFC 3339 time"},
		{ID: "storage/7", Index: 7, Field: "backup_store.jobs[0].last_finished_at", Problem: "not an RFC 3339 time"},
		{ID: "disk/8", Index: 8, Field: "smart.pending_sectors", Problem: "must be a number, got number 1.5"},
		{Index: 9, Field: "(resource)", Problem: "must be an object, got number"},
	}
	if !reflect.DeepEqual(probs, want) {
		t.Errorf("problems\n got %+v\nwant %+v", probs, want)
	}
}
