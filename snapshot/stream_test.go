package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// oddDocuments are spellings the decoder must read as v1 reads them:
// case-folded and escaped keys, duplicates, nulls, wrong types, numbers v1
// cannot hold, escapes and invalid UTF-8 in text, and document-level odds.
var oddDocuments = []string{
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","parents":["storage/a/x","STORAGE/a/y"," storage/a/z"]}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","parents":[null]},{"id":"vm/2","kind":"vm","parents":["vm/2"]}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","parents":"storage/a"},{"id":"vm/2","kind":"vm","parents":[],"Parents":["x"]}]}`,
	`{"version":1,"resources":[{"ID":"vm/1","Kind":"VM","METRICS":{"cpu_percent":5}}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","tags":["a","b"],"tags":[null]}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","metrics":{"a":1},"metrics":{"b":2}}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","metrics":{"b":"x","a":true}}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","metrics":{"a":1e400}}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","metrics":{"a":[1e400],"b":"x"}}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","metrics":{"cpu_percent_avg":100.5}}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","metrics":{"x":-0}}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","metrics":{}}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","tags":[],"labels":{},"logs":null}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","labels":{"a":"1","a":"2"}}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","labels":{"a":null}}]}`,
	`{"version":1,"resources":[{"id":"v\u006d/1","kind":"vm","name":"a\"b\u00e9\ud800x","notes":"caf\u00e9"}]}`,
	"{\"version\":1,\"resources\":[{\"id\":\"vm/\xff\",\"kind\":\"vm\",\"name\":\"\xc3(\"}]}",
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","backup":{"last_success_at":5}}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","backup":{"last_success_at":"2026-11-29T06:00:00+01:00","last_finished_at":null}}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","backup":{"last_success_at":"last week"},"tags":5}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","tags":5,"backup":{"last_success_at":"x"}}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","backup":{"Last_Status":"ok","colour":1}}]}`,
	`{"version":1,"resources":[{"id":"disk/1","kind":"disk","smart":{"pending_sectors":1.5}}]}`,
	`{"version":1,"resources":[{"id":"disk/1","kind":"disk","smart":{"pending_sectors":1e2,"temperature_c":null}}]}`,
	`{"version":1,"resources":[{"id":"disk/1","kind":"disk","smart":{"wearout_percent":-1,"temperature_c":-5}}]}`,
	`{"version":1,"resources":[{"id":"disk/1","kind":"disk","smart":{"nvme_critical_warning":4,"grown_defects":12}}]}`,
	`{"version":1,"resources":[{"id":"disk/1","kind":"disk","smart":{"nvme_critical_warning":-1}},{"id":"disk/2","kind":"disk","smart":{"grown_defects":-2}}]}`,
	`{"version":1,"resources":[{"id":"storage/n/zpool/rpool","kind":"storage","zfs":{"state":"DEGRADED","read_errors":1,"write_errors":2,"checksum_errors":3}}]}`,
	`{"version":1,"resources":[{"id":"storage/n/zpool/a","kind":"storage","zfs":{"state":5}},{"id":"storage/n/zpool/b","kind":"storage","zfs":{"checksum_errors":-1}},{"id":"storage/n/zpool/c","kind":"storage","zfs":null},{"id":"storage/n/zpool/d","kind":"storage","zfs":{"State":"ONLINE","colour":1}}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","backup":{"last_status":"ok","storage":"storage/pve2/local"}},{"id":"vm/2","kind":"vm","backup":{"storage":5}}]}`,
	`{"version":1,"resources":[{"id":5,"kind":"vm"},{"id":null,"kind":"vm"},{"id":"  ","kind":"vm"},{"id":" X/Y ","kind":"Disk"}]}`,
	`{"version":1,"resources":[null,5,"x",[],{},true]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","reachable":"yes"},{"id":"vm/2","kind":"vm","reachable":false}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","status":"RUNNING","parent":"node/1","addresses":["a:1",null]}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm"}],"resources":[{"id":"vm/2","kind":"vm","id":"vm/3"}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm"}],"resources":null}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm"}],"source":5}`,
	`{"source":5,"version":2,"resources":[]}`,
	`{"version":null,"resources":[]}`,
	`{"version":1.0,"resources":[]}`,
	`{"version": [ 1 ],"resources":[]}`,
	`{"Version":1,"RESOURCES":[],"Source":"x","source":null}`,
	`{"version":1,"taken_at":null,"resources":[]}`,
	`{"version":1,"taken_at":5,"resources":[]}`,
	`{"version":1,"resources":[]} x`,
	`{"version":1,"resources":[]} {}`,
	`{"version":1,"resources":[`,
	``,
	`null`,
	`"x"`,
	`5`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","colour":"red","Kind":"vm"}],"extra":[1,{"a":2}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","nAme":"x"}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","k\u0131nd":"x","\u212aind":"node"}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm"},{"id":"VM/1","kind":"vm"},{"id":"vm/1","kind":"bad"}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm"},{"id":"vm/1","kind":"vm"},{"id":"vm/2","kind":"vm"},{"id":"vm/3","kind":"vm"}]}`,
	// Lists and times a repeat shares, then written again in one resource.
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","tags":["a","b"]},{"id":"vm/2","kind":"vm","tags":["a","b"],"tags":[null]},{"id":"vm/3","kind":"vm","tags":["a","b"],"parents":["node/a"],"tags":["c"]}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","backup":{"last_success_at":"2026-11-29T06:00:00Z"}},{"id":"vm/2","kind":"vm","backup":{"last_success_at":"2026-11-29T06:00:00Z","last_success_at":"2026-11-29T07:00:00Z"}},{"id":"vm/3","kind":"vm","backup":{"last_success_at":"2026-11-29T06:00:00Z"},"backup":{"last_status":"ok"}}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","tags":["a",5]},{"id":"vm/2","kind":"vm","addresses":["x",true,"y"]},{"id":"vm/3","kind":"vm","logs":[[]]},{"id":"vm/4","kind":"vm","labels":{"k":5}}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","tags":["caf\u00e9","\ud800","a\"b"],"labels":{"k\u00e9":"\u0041"}}]}`,
	"{\"version\":1,\"resources\":[{\"id\":\"vm/1\",\"kind\":\"vm\",\"tags\":[\"\xff\"],\"status\":\"\xfe\",\"metrics\":{\"\xfd\":1}}]}",
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","metrics":{"a":1},"metrics":null,"metrics":{"b":null}},{"id":"vm/2","kind":"vm","metrics":{"a":1},"metrics":{"b":2,"a":3}}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","status":null,"name":"x","name":null,"reachable":true,"reachable":null,"smart":{"wearout_percent":1},"smart":{"wearout_percent":null}}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","backup_store":{"jobs":[{"id":"j","type":"gc","last_finished_at":"x"}]}},{"id":"vm/2","kind":"vm","backup":{"colour":1},"smart":{"x":1}}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","tags":5,"id":"vm/2"},{"tags":5,"id":"vm/3"},{"id":"vm/4","tags":5,"id":7},{"backup":{"last_success_at":1},"id":"vm/5"}]}`,
	`{"version":1,"resources":[{"id":"vm","kind":"vm"},{"id":"/1","kind":"vm"},{"id":"vm/","kind":"vm"},{"id":"--all","kind":"vm"},{"id":" /x","kind":"vm"}]}`,
	`{"version":1,"resources":[{"id":"vm/1","kind":"vm","Metrics":{"a":1},"TAGS":["x"],"bAcKuP":{"LAST_STATUS":"ok"}}]}`,
}

// TestStreamMatchesV1 holds the decoder to the encoding/json v1 reference,
// on the examples, generated fleets and odd spellings.
func TestStreamMatchesV1(t *testing.T) {
	docs := append([]string(nil), oddDocuments...)
	for _, name := range []string{"small-healthy.json", "small-faults.json", "proxmox-health.json"} {
		data, err := os.ReadFile("../examples/" + name)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(data))
	}
	for _, strict := range []bool{false, true} {
		for _, doc := range docs {
			compareV1(t, []byte(doc), strict)
		}
	}
}

func FuzzDecodeMatchesV1(f *testing.F) {
	for _, doc := range oddDocuments {
		f.Add([]byte(doc), false)
	}
	data, _ := os.ReadFile("../examples/small-faults.json")
	f.Add(data, true)
	f.Fuzz(func(t *testing.T, data []byte, strict bool) {
		compareV1(t, data, strict)
	})
}

// compareV1 holds Decode to the v1 reference on data: the same verdicts
// (the document refused or not, each resource kept or dropped, with its
// id, place and field checks) and the same values kept. Words may differ
// where v1's are an accident of its reflection decoder:
//   - invalid JSON is described by the tokenizer (the offset, the words);
//   - a resource v1 cannot read names the first bad field in document
//     order, with its path ("metrics.a", "backup.last_success_at"), where
//     v1 names a field by key order, or the enclosing object, or none;
//   - an unknown field (strict) is named with its path ("backup.colour").
func compareV1(t *testing.T, data []byte, strict bool) {
	t.Helper()
	opts := DecodeOptions{Strict: strict}
	wantSnap, wantProbs, wantErr := decodeV1(data, opts)
	gotSnap, gotProbs, gotErr := Decode(data, opts)
	if !sameError(gotErr, wantErr) {
		t.Fatalf("%q strict=%v: error %v, v1 %v", data, strict, gotErr, wantErr)
	}
	if !reflect.DeepEqual(gotSnap, wantSnap) {
		t.Fatalf("%q strict=%v: snapshot\n%+v\nv1\n%+v", data, strict, gotSnap, wantSnap)
	}
	if !sameProblems(gotProbs, wantProbs) {
		t.Fatalf("%q strict=%v: problems\n%v\nv1\n%v", data, strict, gotProbs, wantProbs)
	}
	checkKept(t, data, opts, gotSnap, gotProbs, gotErr)
	// The stream reader agrees, words and all.
	rs, rp, rerr := DecodeReader(bytes.NewReader(data), opts)
	if (rerr == nil) != (gotErr == nil) || (rerr != nil && rerr.Error() != gotErr.Error()) {
		t.Fatalf("%q: DecodeReader %v, Decode %v", data, rerr, gotErr)
	}
	if !reflect.DeepEqual(rs, gotSnap) || !reflect.DeepEqual(rp, gotProbs) {
		t.Fatalf("%q: DecodeReader %+v %v, Decode %+v %v", data, rs, rp, gotSnap, gotProbs)
	}
}

// sameError: both nil, or both document errors with the same field and
// words, or both invalid JSON.
func sameError(got, v1 error) bool {
	if got == nil || v1 == nil {
		return got == v1
	}
	var g, w *DocumentError
	if !errors.As(got, &g) || !errors.As(v1, &w) {
		return false
	}
	if syntax := func(e *DocumentError) bool { return e.Field == "" && strings.HasPrefix(e.Problem, "not valid JSON") }; syntax(w) {
		return syntax(g)
	}
	return *g == *w
}

// sameProblems compares problem lists (see compareV1 for the words that
// may differ). Which negative SMART counter is named may differ too.
func sameProblems(got, v1 []Problem) bool {
	if len(got) != len(v1) {
		return false
	}
	for i := range got {
		x, y := got[i], v1[i]
		switch {
		case unread(y):
			if !unread(x) {
				return false
			}
			x.Field, x.Problem, y.Field, y.Problem = "", "", "", ""
		case y.Warning && y.Problem == "unknown field (ignored)" && strings.HasSuffix(x.Field, y.Field):
			x.Field = y.Field
		case strings.HasPrefix(x.Field, "smart.") && strings.HasPrefix(y.Field, "smart.") && x.Problem == "negative" && y.Problem == "negative":
			x.Field, y.Field = "", ""
		}
		if x != y {
			return false
		}
	}
	return true
}

// unread reports whether a problem says the resource could not be read
// (rather than broke a rule of check).
func unread(p Problem) bool {
	return !p.Warning && (strings.HasPrefix(p.Problem, "must be ") || p.Problem == "not an RFC 3339 time" || p.Field == "(resource)")
}

// TestDecodeReaderStreams decodes a generated fleet from a reader and
// gets what Decode gets from the bytes.
func TestDecodeReaderStreams(t *testing.T) {
	snap := &Snapshot{Version: 1, TakenAt: time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC), Source: "t"}
	for i := range 3000 {
		snap.Resources = append(snap.Resources, Resource{ID: "vm/" + strconv.Itoa(i), Kind: KindVM,
			Status: StatusRunning, Tags: []string{"prod"}, Metrics: MetricsOf(map[string]float64{MetricCPU: float64(i % 120)})})
	}
	data, err := Encode(snap)
	if err != nil {
		t.Fatal(err)
	}
	a, ap, aerr := Decode(data, DecodeOptions{})
	b, bp, berr := DecodeReader(bytes.NewReader(data), DecodeOptions{})
	if aerr != nil || berr != nil {
		t.Fatal(aerr, berr)
	}
	if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(ap, bp) {
		t.Fatal("DecodeReader and Decode differ")
	}
	compareV1(t, data, false)
	if len(ap) == 0 || ap[0].Field != "metrics.cpu_percent" || ap[0].Problem != "outside 0..100" {
		t.Fatalf("problems %v", ap)
	}
}

// TestDuplicatePlaces: every copy of a repeated id is dropped with a
// problem naming its place in the array, counted over the elements
// dropped before it and unmoved by warnings, in both decoders.
func TestDuplicatePlaces(t *testing.T) {
	doc := `{"version":1,"colour":1,"resources":[
	 {"id":"x/1","kind":"switch"},
	 {"id":"vm/1","kind":"vm","status":"zombie"},
	 {"kind":"vm"},
	 {"id":"vm/2","kind":"vm","colour":2},
	 {"id":"VM/1","kind":"vm"},
	 {"id":"vm/3","kind":"vm","metrics":{"cpu_percent":101}},
	 {"id":"vm/2","kind":"vm"},
	 {"id":"vm/1","kind":"vm"},
	 {"id":"vm/4","kind":"vm"}
	]}`
	dup := func(id string, i, n int) Problem {
		return Problem{ID: id, Index: i, Field: "id", Problem: "duplicate id (appears " + strconv.Itoa(n) + " times; every copy dropped)"}
	}
	want := []Problem{
		{ID: "(document)", Index: 0, Field: "colour", Problem: "unknown field (ignored)", Warning: true},
		{ID: "x/1", Index: 0, Field: "kind", Problem: `unknown kind "switch" (want node, vm, container, storage, disk or cluster)`},
		{ID: "vm/1", Index: 1, Field: "status", Problem: `unrecognised status "zombie" for a vm; treated as unknown`, Warning: true},
		{Index: 2, Field: "id", Problem: "required"},
		{ID: "vm/2", Index: 3, Field: "colour", Problem: "unknown field (ignored)", Warning: true},
		{ID: "vm/3", Index: 5, Field: "metrics.cpu_percent", Problem: "outside 0..100"},
		dup("vm/1", 1, 3), dup("vm/2", 3, 2), dup("vm/1", 4, 3), dup("vm/2", 6, 2), dup("vm/1", 7, 3),
	}
	for name, decode := range map[string]func([]byte, DecodeOptions) (*Snapshot, []Problem, error){"stream": Decode, "v1": decodeV1} {
		snap, probs, err := decode([]byte(doc), DecodeOptions{Strict: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(probs, want) {
			t.Errorf("%s: problems\n%v\nwant\n%v", name, probs, want)
		}
		if len(snap.Resources) != 1 || snap.Resources[0].ID != "vm/4" {
			t.Errorf("%s: kept %v, want vm/4 alone", name, snap.Resources)
		}
	}
}

// checkKept decodes data again, handing resources over (DecodeOptions.Kept,
// one and two at a time). It checks that:
//   - the outcome is the one without a consumer;
//   - a batch is never written after it was handed over;
//   - positions count the resources of an array;
//   - a snapshot that holds its batches holds exactly those of its last
//     array, in order.
func checkKept(t *testing.T, data []byte, opts DecodeOptions, want *Snapshot, wantProbs []Problem, wantErr error) {
	t.Helper()
	for _, n := range []int{1, 2} {
		type handed struct {
			rs   []Resource
			seen string // the batch as it was handed over
		}
		var got []handed
		next := 0 // the position the next batch of this array takes
		var decoding uint64
		o := opts
		o.KeptBatch = n
		o.Kept = func(h Handed) {
			rs, at := h.Resources, h.At
			if len(rs) == 0 || len(rs) > n || cap(rs) != len(rs) {
				t.Fatalf("%q: a batch of %d (cap %d), want 1 to %d, no room to append", data, len(rs), cap(rs), n)
			}
			if at != 0 && at != next {
				t.Fatalf("%q: a batch at %d, want 0 (a later array) or %d", data, at, next)
			}
			if h.Decoding == 0 || decoding != 0 && h.Decoding != decoding {
				t.Fatalf("%q: a batch of decoding %d, after %d", data, h.Decoding, decoding)
			}
			if at == 0 {
				got = got[:0]
			}
			next, decoding = at+len(rs), h.Decoding
			got = append(got, handed{rs, fmt.Sprintf("%#v", rs)})
		}
		snap, probs, err := Decode(data, o)
		held := snap != nil && snap.HeldFrom() != 0
		if held && snap.HeldFrom() != decoding {
			t.Fatalf("%q: held from decoding %d, the batches were %d's", data, snap.HeldFrom(), decoding)
		}
		if snap != nil {
			cp := *snap
			cp.heldFrom = 0
			snap = &cp
		}
		if (err == nil) != (wantErr == nil) || !reflect.DeepEqual(snap, want) || !sameProblems(probs, wantProbs) {
			t.Fatalf("%q: with a consumer %v %+v %v, without %v %+v %v", data, err, snap, probs, wantErr, want, wantProbs)
		}
		var joined []Resource
		for i, h := range got {
			if now := fmt.Sprintf("%#v", h.rs); now != h.seen {
				t.Fatalf("%q: batch %d was written after it was handed over:\n%s\nthen\n%s", data, i, h.seen, now)
			}
			joined = append(joined, h.rs...)
		}
		if held && !reflect.DeepEqual(joined, snap.Resources) {
			t.Fatalf("%q: holds its batches but they are not its resources:\n%#v\n%#v", data, joined, snap.Resources)
		}
		if want != nil && want.HeldFrom() != 0 {
			t.Fatalf("%q: decoded without a consumer, the snapshot says it holds batches", data)
		}
	}
}

// TestHeldFrom: a snapshot holds the batches its decoding handed over when
// it has them all (those of its last array, copies or not). It does not
// when a duplicate dropped some, or when its last array handed none over.
// Nor does it without a consumer, nor when built otherwise.
func TestHeldFrom(t *testing.T) {
	vm := func(id string) string { return `{"id":"vm/` + id + `","kind":"vm"}` }
	for _, c := range []struct {
		name, doc string
		want      bool
	}{
		{"one array", `{"version":1,"resources":[` + vm("1") + `,` + vm("2") + `,` + vm("3") + `]}`, true},
		{"a later array", `{"version":1,"resources":[` + vm("1") + `],"resources":[` + vm("2") + `]}`, true},
		{"a duplicate", `{"version":1,"resources":[` + vm("1") + `,` + vm("2") + `,` + vm("1") + `]}`, false},
		{"keys the guess misses (the slice grows)", `{"version":1,"resources":[{"id":"vm/1","Kind":"vm"},{"id":"vm/2","Kind":"vm"},{"id":"vm/3","Kind":"vm"}]}`, true},
		{"nothing kept", `{"version":1,"resources":[{"id":"vm/1","kind":"toaster"}]}`, false},
		{"a later array keeping nothing", `{"version":1,"resources":[` + vm("1") + `],"resources":[{"id":"x","kind":"toaster"}]}`, false},
		{"a later empty array", `{"version":1,"resources":[` + vm("1") + `],"resources":[]}`, false},
	} {
		var handed []Resource
		var decoding uint64
		snap, _, err := Decode([]byte(c.doc), DecodeOptions{KeptBatch: 1, Kept: func(h Handed) {
			if h.At == 0 {
				handed = handed[:0]
			}
			handed, decoding = append(handed, h.Resources...), h.Decoding
		}})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if held := snap.HeldFrom() != 0 && snap.HeldFrom() == decoding; held != c.want || !held && snap.HeldFrom() != 0 {
			t.Errorf("%s: held from %d (the batches' decoding %d), want held %v", c.name, snap.HeldFrom(), decoding, c.want)
		}
		if c.want && !reflect.DeepEqual(handed, snap.Resources) {
			t.Errorf("%s: holds %v, handed %v", c.name, snap.Resources, handed)
		}
		plain, _, _ := Decode([]byte(c.doc), DecodeOptions{})
		if plain.HeldFrom() != 0 {
			t.Errorf("%s: decoded without a consumer, the snapshot holds batches", c.name)
		}
	}
	if (&Snapshot{Resources: []Resource{{ID: "vm/1"}}}).HeldFrom() != 0 {
		t.Error("a snapshot built by hand holds batches")
	}
}
