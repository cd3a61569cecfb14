package patrol

import (
	"maps"
	"testing"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/snapshot"
)

// TestStreamTakesOneDecodingsBatches: batches of another decoding in the
// middle of an array (two decodings interleaved by one consumer), or a
// batch that never reached the stream, leave it no guess, whatever the
// snapshot holds.
func TestStreamTakesOneDecodingsBatches(t *testing.T) {
	doc := []byte(`{"version":1,"taken_at":"2026-11-29T06:00:00Z","resources":[` +
		`{"id":"vm/1","kind":"vm","status":"running","metrics":{"memory_percent":95}},` +
		`{"id":"vm/2","kind":"vm","status":"running","metrics":{"memory_percent":96}}]}`)
	pol, err := alerts.New(alerts.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		other uint64 // added to the second batch's decoding
		lose  bool   // the second batch is not handed on
		want  string
	}{
		{"one decoding", 0, false, streamWhole},
		{"another decoding mid-array", 1, false, streamDiscarded},
		{"the last batch lost", 0, true, streamDiscarded},
	} {
		s := newDetectStream(pol, nil, nil)
		second := false
		snap, _, err := snapshot.Decode(doc, snapshot.DecodeOptions{KeptBatch: 1, Kept: func(h snapshot.Handed) {
			if second {
				h.Decoding += c.other
				if c.lose {
					return
				}
			}
			second = true
			s.kept(h)
		}})
		if err != nil {
			t.Fatal(err)
		}
		if _, use := s.result(snap, activeSignals(nil), false); use != c.want {
			t.Errorf("%s: the stream was used %q, want %q", c.name, use, c.want)
		}
	}
}

// TestStreamIndexesWhatTheRunAsks: the stream's resource index holds the
// resources the run asks about, and only those: each with a signal
// (active or not), each of an active finding, each probe candidate; not a
// resource with none of these. The attack is an index that misses one,
// which the run's lookups would answer by indexing the whole snapshot.
func TestStreamIndexesWhatTheRunAsks(t *testing.T) {
	doc := []byte(`{"version":1,"taken_at":"2026-11-29T06:00:00Z","resources":[` +
		`{"id":"vm/hot","kind":"vm","status":"running","metrics":{"memory_percent":95}},` +
		`{"id":"vm/calm","kind":"vm","status":"running","metrics":{"memory_percent":10}},` +
		`{"id":"vm/was-hot","kind":"vm","status":"running","metrics":{"memory_percent":10}},` +
		`{"id":"vm/probed","kind":"vm","status":"running","addresses":["10.0.0.1:22"],"metrics":{"memory_percent":10}},` +
		`{"id":"vm/hot-again","kind":"vm","status":"running","metrics":{"memory_percent":97}}]}`)
	pol, err := alerts.New(alerts.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	active := []findings.Finding{
		{Key: "high_memory", Category: findings.CategoryPerformance, ResourceID: "vm/was-hot"},
		{Key: "high_memory", Category: findings.CategoryPerformance, ResourceID: "VM/hot-again"},
	}
	s := newDetectStream(pol, active, nil)
	snap, _, err := snapshot.Decode(doc, snapshot.DecodeOptions{KeptBatch: 2, Kept: s.kept})
	if err != nil {
		t.Fatal(err)
	}
	out, use := s.result(snap, activeSignals(active), false)
	if use != streamWhole || out.index == nil {
		t.Fatalf("the stream was used %q (index %v), want whole, with an index", use, out.index != nil)
	}
	got := map[string]int{} // id: its position in the snapshot
	for id, r := range out.index.byID {
		got[id] = -1
		for i := range snap.Resources {
			if r == &snap.Resources[i] {
				got[id] = i
			}
		}
	}
	want := map[string]int{"vm/hot": 0, "vm/was-hot": 2, "vm/probed": 3, "vm/hot-again": 4}
	if !maps.Equal(got, want) || out.index.full {
		t.Fatalf("the index holds %v (full %v), want %v", got, out.index.full, want)
	}
}
