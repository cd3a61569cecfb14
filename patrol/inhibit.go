package patrol

import (
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/snapshot"
)

// inhibit marks the observations whose cause is a parent's observation
// of this run (findings.Inhibit) over the snapshot's topology.
func inhibit(obs []findings.Observation, byID *resourceIndex) {
	findings.Inhibit(obs, parentsIn(byID))
}

// parentsIn is the topology parents of a resource of the index, nil for
// one it does not hold.
func parentsIn(byID *resourceIndex) func(id string) []string {
	return func(id string) []string {
		r := byID.indexed(id)
		if r == nil {
			return nil
		}
		return topologyParents(r)
	}
}

// topologyParents are the parents inhibition walks from r: its parent
// and parents (docs/SOURCES.md#topology), then the storage its newest
// backup is on, which a full or degraded backup storage explains.
func topologyParents(r *snapshot.Resource) []string {
	out := r.ParentIDs()
	if b := r.Backup; b != nil && b.Storage != "" {
		out = append(out, snapshot.CanonicalID(b.Storage))
	}
	return out
}

// indexed is the resource with id when the index already holds it (the
// run's signals' and active findings' resources), else nil: it never
// builds the full index.
func (x *resourceIndex) indexed(id string) *snapshot.Resource {
	if x.full || x.asked[id] {
		return x.byID[id]
	}
	return nil
}
