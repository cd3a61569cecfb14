package patrol

import (
	"maps"
	"slices"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/probe"
)

// detectStream detects the resources of a snapshot while its source still
// decodes it. The decoder is one goroutine; each batch of resources it
// keeps (snapshot.DecodeOptions.Kept) is detected, neutralised and filed
// on another, on the core decoding leaves idle, and the resources the run
// will look up are noted as they pass.
//
// What the stream made is a guess until the snapshot is decoded. It is
// used only where it is exactly what detecting the decoded snapshot makes
// (result):
//   - the snapshot must hold the very resources the stream read
//     (snapshot.HeldFrom names the decoding whose batches the stream took
//     last: no duplicate dropped, no other decoding, all the batches of the
//     last "resources" array);
//   - detection's hysteresis input must be the one read after the
//     collection;
//   - a batch is detected again when the snapshot's taken_at is not the one
//     it was detected at;
//   - a resource the prober may have given a verdict since (a probe
//     candidate) is detected again.
//
// The attack is a document that changes its mind late;
// TestStreamIsDetection holds the stream to plain detection.
//
// The stream keeps positions, not the batches: the snapshot's resources
// may be copies of them (the slice grew), and what is detected again is
// read from the snapshot.
type detectStream struct {
	th     signals.Thresholds
	active signals.Active
	plain  *prompt.PlainMemo // the runner's plain-text memo
	asked  map[string]bool   // resource ids of the active findings, then of the signals and candidates too
	in     chan streamPart
	done   chan struct{}
	closed bool
	// The consumer's until done:
	decoding uint64         // the decoding of the last array's batches
	parts    []streamPart   // of the last array, in order
	at       map[string]int // position of each asked resource seen
	broken   bool           // a signal named no resource of its batch
}

// streamPart is what was made of one batch.
type streamPart struct {
	rs       []snapshot.Resource // the batch, until it is consumed
	off, n   int                 // its position in the array, and length
	takenAt  time.Time
	decoding uint64
	sigs     []signals.Signal       // neutralised (safeSignal)
	obs      []findings.Observation // observationFor each of sigs, with its resource's tags
	cands    []candidate            // the probe candidates among its resources
}

// candidate is a resource of a batch the prober may give a verdict, and
// the range its signals take in the batch's.
type candidate struct{ j, lo, hi int }

// newDetectStream starts the consumer. active are the active findings read
// before the collection (their keys are enough).
func newDetectStream(th signals.Thresholds, active []findings.Finding, plain *prompt.PlainMemo) *detectStream {
	s := &detectStream{
		th: th, plain: plain, active: activeSignals(active), asked: make(map[string]bool, len(active)),
		in: make(chan streamPart, 64), done: make(chan struct{}), at: make(map[string]int, len(active)),
	}
	for i := range active {
		s.asked[snapshot.CanonicalID(active[i].ResourceID)] = true
	}
	go s.consume()
	return s
}

// kept is the decoder's hook (snapshot.DecodeOptions.Kept).
func (s *detectStream) kept(h snapshot.Handed) {
	s.in <- streamPart{rs: h.Resources, off: h.At, n: len(h.Resources), takenAt: h.TakenAt, decoding: h.Decoding}
}

func (s *detectStream) consume() {
	defer close(s.done)
	memo := newSafeMemo(s.plain)
	var room []signals.Signal // detectSafe's
	for p := range s.in {
		if p.off == 0 { // a (later) array replaces what came before
			s.parts, s.broken, s.decoding = s.parts[:0], false, p.decoding
			clear(s.at)
		} else if p.decoding != s.decoding { // another decoding's, mid-array: no guess at all
			s.broken = true
		}
		p.sigs, room = detectSafe(room, p.rs, p.takenAt, s.th, s.active, memo)
		p.obs = make([]findings.Observation, len(p.sigs))
		i := 0 // the next signal; signals are in resource order
		for j := range p.rs {
			r := &p.rs[j]
			lo := i
			for ; i < len(p.sigs) && p.sigs[i].ResourceID == r.ID; i++ {
				p.obs[i] = memo.observation(&p.sigs[i], r)
			}
			asked := i > lo // a resource with signals, or a candidate, is asked about
			if probe.Candidate(r) {
				p.cands = append(p.cands, candidate{j: j, lo: lo, hi: i})
				asked = true
			}
			if asked {
				s.asked[r.ID] = true
			} else if !s.asked[r.ID] {
				continue
			}
			s.at[r.ID] = p.off + j
		}
		if i < len(p.sigs) { // a signal of no resource of this batch: no guess at all
			s.broken = true
		}
		p.rs = nil // the snapshot's elements are read from here on
		s.parts = append(s.parts, p)
	}
}

// finish waits for the consumer; the decoder has returned, so no batch
// is coming. It is safe to call more than once.
func (s *detectStream) finish() {
	if !s.closed {
		s.closed = true
		close(s.in)
	}
	<-s.done
}

// streamed is what a run takes from the stream: the signals (neutralised),
// their observations and the resource index, each exactly what the plain
// path would make.
type streamed struct {
	sigs  []signals.Signal
	obs   []findings.Observation
	index *resourceIndex
}

// How a run used its stream (the log's "stream" and tests).
const (
	streamWhole     = "whole"     // every batch as detected while decoding
	streamPartly    = "partly"    // some resources detected again
	streamDiscarded = "discarded" // the snapshot detected whole
)

// result is what the stream made of snap, now decoded (and probed, when
// probed is set). It is that when the snapshot holds what the stream read
// and active is the hysteresis input it detected with. Otherwise use is
// streamDiscarded, and the run detects snap whole. A batch detected at
// another taken_at is detected again, and so is every probe candidate of
// a probed snapshot (streamPartly).
func (s *detectStream) result(snap *snapshot.Snapshot, active signals.Active, probed bool) (out streamed, use string) {
	s.finish()
	if len(s.parts) == 0 || s.broken || !maps.Equal(active, s.active) || snap.HeldFrom() != s.decoding {
		return out, streamDiscarded
	}
	n, sigs := 0, 0
	for i := range s.parts {
		if s.parts[i].off != n {
			return out, streamDiscarded
		}
		n += s.parts[i].n
		sigs += len(s.parts[i].sigs)
	}
	if n != len(snap.Resources) {
		return out, streamDiscarded
	}
	out.sigs = make([]signals.Signal, 0, sigs)
	out.obs = make([]findings.Observation, 0, sigs)
	partly, refile := false, false
	memo := newSafeMemo(s.plain)
	var room []signals.Signal
	again := func(rs []snapshot.Resource) (sigs []signals.Signal) {
		sigs, room = detectSafe(room, rs, snap.TakenAt, s.th, active, memo)
		return sigs
	}
	for i := range s.parts {
		p := &s.parts[i]
		rs := snap.Resources[p.off : p.off+p.n]
		switch {
		case !p.takenAt.Equal(snap.TakenAt): // detection reads it only as an instant (ages)
			partly, refile = true, true
			out.sigs = append(out.sigs, again(rs)...)
		case probed && len(p.cands) > 0:
			partly = true
			prev := 0
			for _, c := range p.cands {
				out.sigs = append(out.sigs, p.sigs[prev:c.lo]...)
				out.obs = append(out.obs, p.obs[prev:c.lo]...)
				for _, sig := range again(rs[c.j : c.j+1]) {
					out.sigs, out.obs = append(out.sigs, sig), append(out.obs, memo.observation(&sig, &rs[c.j]))
				}
				prev = c.hi
			}
			out.sigs = append(out.sigs, p.sigs[prev:]...)
			out.obs = append(out.obs, p.obs[prev:]...)
		default:
			out.sigs = append(out.sigs, p.sigs...)
			out.obs = append(out.obs, p.obs...)
		}
	}
	if refile {
		// Whole batches were detected again: the run files these signals
		// and indexes the resources itself.
		return streamed{sigs: out.sigs}, streamPartly
	}
	use = streamWhole
	if partly {
		use = streamPartly
	}
	byID := make(map[string]*snapshot.Resource, len(s.at))
	for id, at := range s.at {
		byID[id] = &snap.Resources[at]
	}
	out.index = &resourceIndex{snap: snap, asked: s.asked, byID: byID}
	return out, use
}

// detectSafe detects rs (taken at takenAt) and neutralises the signals,
// in a new slice of just their number. It detects in room, whose
// elements it overwrites, and hands room back (grown to fit).
// A batch's signals are a slice of their own, so no batch holds another's
// room; and room is not grown from a guess per batch.
func detectSafe(room []signals.Signal, rs []snapshot.Resource, takenAt time.Time, th signals.Thresholds, active signals.Active, memo safeMemo) (sigs, grown []signals.Signal) {
	room = signals.AppendResources(room[:0], rs, takenAt, th, active)
	sigs = slices.Clone(room)
	safeSignals(sigs, memo)
	return sigs, room
}
