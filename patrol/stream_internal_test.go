package patrol

import (
	"testing"

	"github.com/patrold/patrold/alerts"
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
