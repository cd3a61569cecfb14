package patrol

import (
	"slices"

	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/probe"
)

// parentsIn is the topology parents of a resource the run asked about,
// nil for one the snapshot does not hold or the run did not ask about.
// nets are the unroutable networks of the guests (unroutableNets),
// parents after the topology's.
func (x *resourceFacts) parentsIn(nets map[string][]string) func(id string) []string {
	return func(id string) []string {
		r, ok := x.held[id]
		if !ok || !x.asked[id] {
			return nil
		}
		return append(slices.Clip(r.parents), nets[id]...)
	}
}

// unroutableNets maps each guest (canonical id) of a probe result to the
// resources of the networks it had an address in that the patrol host
// could not send to (NetworkResourceID), in address order, each once.
// Such a network is a parent of the guest this run. It holds only what
// the run keeps open: a guest that answered on another address is
// judged on that.
func unroutableNets(res *probe.Result) map[string][]string {
	if res == nil || len(res.Unroutable) == 0 {
		return nil
	}
	out := map[string][]string{}
	for _, a := range res.Addresses {
		if a.Outcome != probe.OutcomeUnroutable {
			continue
		}
		id, n := snapshot.CanonicalID(a.ResourceID), NetworkResourceID(probe.NetworkOf(a.Address))
		if !slices.Contains(out[id], n) {
			out[id] = append(out[id], n)
		}
	}
	return out
}

// topologyParents are the parents inhibition walks from r: its parent
// and parents (docs/SOURCES.md#topology). The storage its backups go to
// is not one: a full storage explains its guests' disk findings, never
// a stale or failed backup (docs/FINDINGS.md#inhibition).
func topologyParents(r *snapshot.Resource) []string { return r.ParentIDs() }

// indexed is the resource with id when the index already holds it (the
// run's signals' and active findings' resources), else nil: it never
// builds the full index.
func (x *resourceIndex) indexed(id string) *snapshot.Resource {
	if x.full || x.asked[id] {
		return x.byID[id]
	}
	return nil
}
