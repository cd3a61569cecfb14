package patrol

import (
	"slices"

	"github.com/patrold/patrold/snapshot"
)

// MaxScopeResources bounds the resources a scoped run may name.
const MaxScopeResources = 1000

// Scope is what a scoped run was asked to look at, as its report records
// it: the resources named (canonical ids), why, and how many resources
// of the snapshot the run patrolled (those, their parents and their
// children).
type Scope struct {
	Resources []string `json:"resources"`
	Reason    string   `json:"reason,omitempty"`
	Patrolled int      `json:"patrolled"`
}

// scopeSnapshot returns a snapshot of the resources of snap in scope:
// the named ones, their parents and their children (resources one of
// whose parents is named), and the ids of those the snapshot holds: the
// run's scope. A resource of the scope the source did not report is
// outside it, so a scoped run never resolves anything by absence. snap
// is not changed (its resources are shared, read-only).
func scopeSnapshot(snap *snapshot.Snapshot, named []string) (*snapshot.Snapshot, map[string]bool) {
	in := make(map[string]bool, len(named))
	for _, id := range named {
		in[snapshot.CanonicalID(id)] = true
	}
	scope := make(map[string]bool, len(in))
	for id := range in {
		scope[id] = true
	}
	for i := range snap.Resources {
		r := &snap.Resources[i]
		parents := r.ParentIDs()
		if in[r.ID] {
			for _, p := range parents { // the named resource's parents
				scope[p] = true
			}
		}
		if slices.ContainsFunc(parents, func(p string) bool { return in[p] }) {
			scope[r.ID] = true // a child of a named resource
		}
	}
	out := &snapshot.Snapshot{Version: snap.Version, TakenAt: snap.TakenAt, Source: snap.Source}
	present := make(map[string]bool, len(scope))
	for i := range snap.Resources {
		if scope[snap.Resources[i].ID] {
			out.Resources = append(out.Resources, snap.Resources[i])
			present[snap.Resources[i].ID] = true
		}
	}
	return out, present
}

// canonicalIDs returns ids canonical, in order.
func canonicalIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = snapshot.CanonicalID(id)
	}
	return out
}
