package patrol

import (
	"slices"

	"github.com/patrold/patrold/signals"
)

// resourceFacts are what a run reads of its snapshot once its
// observations are made (inhibition, holds and reconciliation, through
// the commit): for each resource it asked about (resourceIndex), whether
// the snapshot holds it, which catalogue types the detector evaluated
// on it and its topology parents. Built once, they let the snapshot go
// before the commit.
type resourceFacts struct {
	asked map[string]bool
	held  map[string]resourceFact // by canonical id; absent: not in the snapshot
}

// resourceFact is one held resource's facts.
type resourceFact struct {
	types   uint32   // bit i: signals.Evaluated for signals.Types[i]
	parents []string // topologyParents
}

func (f resourceFact) evaluated(typ signals.Type) bool {
	i := slices.Index(signals.Types, typ)
	return i >= 0 && f.types&(1<<i) != 0
}

// newResourceFacts reads the facts of the resources x was asked about,
// as x answers for them (the last resource with an id wins).
func newResourceFacts(x *resourceIndex) *resourceFacts {
	out := &resourceFacts{asked: x.asked, held: make(map[string]resourceFact, len(x.asked))}
	for id := range x.asked {
		r := x.indexed(id)
		if r == nil {
			continue
		}
		var types uint32
		for i, t := range signals.Types {
			if signals.Evaluated(r, t) {
				types |= 1 << i
			}
		}
		out.held[id] = resourceFact{types: types, parents: topologyParents(r)}
	}
	return out
}
