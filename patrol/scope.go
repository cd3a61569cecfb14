package patrol

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/patrold/patrold/snapshot"
)

// Bounds of a scoped run's request.
const (
	// MaxScopeResources bounds the resources a scoped run may name.
	MaxScopeResources = 1000
	// MaxScopeReasonBytes bounds the reason it gives.
	MaxScopeReasonBytes = 1024
)

// CheckScope names, as "field: problem" lines, what makes a scoped run's
// request unfit: resources must be at most MaxScopeResources resource
// ids (not blank, IDProblem finds nothing), and the reason printable
// UTF-8 of at most MaxScopeReasonBytes. nil when it is fit.
func CheckScope(resources []string, reason string) error {
	var errs []error
	if len(resources) > MaxScopeResources {
		errs = append(errs, fmt.Errorf("resources: %d resources, at most %d", len(resources), MaxScopeResources))
	}
	for i, id := range resources[:min(len(resources), MaxScopeResources)] {
		switch {
		case strings.TrimSpace(id) == "":
			errs = append(errs, fmt.Errorf("resources[%d]: empty", i))
		case snapshot.IDProblem(id) != "":
			errs = append(errs, fmt.Errorf("resources[%d]: %s", i, snapshot.IDProblem(id)))
		}
	}
	switch {
	case len(reason) > MaxScopeReasonBytes:
		errs = append(errs, fmt.Errorf("reason: longer than %d bytes", MaxScopeReasonBytes))
	case !utf8.ValidString(reason):
		errs = append(errs, errors.New("reason: not valid UTF-8"))
	case strings.ContainsFunc(reason, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		errs = append(errs, errors.New("reason: control characters"))
	}
	return errors.Join(errs...)
}

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
