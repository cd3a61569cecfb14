package patrol

import (
	"maps"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// detectStream detects the resources of a snapshot while its source still
// decodes it. The decoder is one goroutine; each batch of resources it
// keeps (snapshot.DecodeOptions.Kept) is detected, neutralised and filed
// on another, on the core decoding leaves idle, and the resources the run
// will look up are indexed as they pass.
//
// What the stream made is a guess until the snapshot is decoded: it is
// used only where it is exactly what detecting the decoded snapshot makes
// (result). The snapshot must hold the very elements the stream read
// (snapshot.Holds: no later "resources" array, no duplicate dropped, no
// copy), detection's hysteresis input must be the one read after the
// collection, and a batch is detected again when the snapshot's taken_at
// is not the one it was detected at or the prober has since given one of
// its guests a verdict. The attack is a document that changes its mind
// late; TestStreamIsDetection holds the stream to plain detection.
type detectStream struct {
	th     signals.Thresholds
	active signals.Active
	asked  map[string]bool // resource ids of the active findings, then of the signals too
	in     chan streamPart
	done   chan struct{}
	parts  []streamPart // in document order; the consumer's until done
	byID   map[string]*snapshot.Resource
	closed bool
	broken bool // a signal named no resource of its batch
}

// streamPart is one batch and what was made of it.
type streamPart struct {
	rs      []snapshot.Resource
	takenAt time.Time
	sigs    []signals.Signal       // neutralised (safeSignal)
	obs     []findings.Observation // observationFor each of sigs, with its resource's tags
}

// newDetectStream starts the consumer. active are the active findings read
// before the collection (their keys are enough).
func newDetectStream(th signals.Thresholds, active []findings.Finding) *detectStream {
	s := &detectStream{
		th: th, active: activeSignals(active), asked: make(map[string]bool, len(active)),
		in: make(chan streamPart, 64), done: make(chan struct{}), byID: make(map[string]*snapshot.Resource, len(active)),
	}
	for i := range active {
		s.asked[snapshot.CanonicalID(active[i].ResourceID)] = true
	}
	go s.consume()
	return s
}

// kept is the decoder's hook (snapshot.DecodeOptions.Kept).
func (s *detectStream) kept(batch []snapshot.Resource, takenAt time.Time) {
	s.in <- streamPart{rs: batch, takenAt: takenAt}
}

func (s *detectStream) consume() {
	defer close(s.done)
	memo := safeMemo{}
	for p := range s.in {
		p.sigs = signals.DetectResources(p.rs, p.takenAt, s.th, s.active)
		safeSignals(p.sigs, memo)
		p.obs = make([]findings.Observation, len(p.sigs))
		j := 0 // the resource of signal i, signals being in resource order
		for i := range p.sigs {
			for j < len(p.rs) && p.rs[j].ID != p.sigs[i].ResourceID {
				j++
			}
			if j == len(p.rs) { // not a signal of this batch's resources: no guess at all
				s.broken = true
				break
			}
			p.obs[i] = observationFor(&p.sigs[i])
			p.obs[i].ResourceTags = memo.names(p.rs[j].Tags)
			s.asked[p.sigs[i].ResourceID] = true
		}
		for j := range p.rs {
			if id := p.rs[j].ID; s.asked[id] {
				s.byID[id] = &p.rs[j]
			}
		}
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
	streamPartly    = "partly"    // some batches detected again
	streamDiscarded = "discarded" // the snapshot detected whole
)

// result is what the stream made of snap, now decoded (and probed: probed
// holds the ids of the resources the prober gave a verdict), when the
// snapshot is what the stream read and active is the hysteresis input
// it detected with; otherwise use is streamDiscarded, and the run detects
// snap whole. A batch detected at another taken_at or holding a probed
// resource is detected again (streamPartly).
func (s *detectStream) result(snap *snapshot.Snapshot, active signals.Active, probed map[string]bool) (out streamed, use string) {
	s.finish()
	if len(s.parts) == 0 || s.broken || !maps.Equal(active, s.active) {
		return out, streamDiscarded
	}
	batches := make([][]snapshot.Resource, len(s.parts))
	n := 0
	for i := range s.parts {
		batches[i] = s.parts[i].rs
		n += len(s.parts[i].sigs)
	}
	if !snap.Holds(batches) {
		return out, streamDiscarded
	}
	out.sigs = make([]signals.Signal, 0, n)
	out.obs = make([]findings.Observation, 0, n)
	redone := false
	var memo safeMemo
	for i := range s.parts {
		p := &s.parts[i]
		// Detection reads taken_at only as an instant (ages).
		if !p.takenAt.Equal(snap.TakenAt) || holdsAny(p.rs, probed) {
			if memo == nil {
				memo = safeMemo{}
			}
			redone = true
			sigs := signals.DetectResources(p.rs, snap.TakenAt, s.th, active)
			safeSignals(sigs, memo)
			out.sigs = append(out.sigs, sigs...)
			continue
		}
		out.sigs = append(out.sigs, p.sigs...)
		out.obs = append(out.obs, p.obs...)
	}
	if redone {
		// The observations and the index answered other signals: the
		// run makes them from these.
		out.obs = nil
		return out, streamPartly
	}
	out.index = &resourceIndex{snap: snap, asked: s.asked, byID: s.byID}
	return out, streamWhole
}

// holdsAny reports whether one of rs has an id in ids.
func holdsAny(rs []snapshot.Resource, ids map[string]bool) bool {
	if len(ids) == 0 {
		return false
	}
	for i := range rs {
		if ids[rs[i].ID] {
			return true
		}
	}
	return false
}
