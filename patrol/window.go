package patrol

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// Operation windows (docs/FINDINGS.md#operation-windows): while PVE runs
// an operation on a guest, the load and the pauses it causes are not
// the guest's problem.
var (
	// windowLocks are the guest locks an operation in progress takes.
	windowLocks = map[string]bool{"backup": true, "migrate": true, "snapshot": true, "snapshot-delete": true,
		"rollback": true, "clone": true, "suspending": true}
	// windowTasks are the running tasks that open a window by themselves.
	windowTasks = map[string]bool{"vzdump": true, "qmigrate": true, "vzmigrate": true}
)

// WindowResourceID is the resource of patrold's finding about a guest's
// operation window: a parent of the guest while the window lasts.
func WindowResourceID(guestID string) string {
	return snapshot.CanonicalID(findings.SyntheticResourcePrefix + "window/" + snapshot.CanonicalID(guestID))
}

// inWindow reports whether r is a guest an operation holds: a lock of
// windowLocks, or a running task of windowTasks.
func inWindow(r *snapshot.Resource) bool {
	g := r.Guest
	if !r.Kind.Guest() || g == nil {
		return false
	}
	//mutate:window-lock ./cmd/patrold ^TestRunWindowHolds
	if g.Lock != nil && windowLocks[g.Lock.Name] {
		return true
	}
	return g.Task != nil && windowTasks[g.Task.Type]
}

// windowsOf lists the observations of this snapshot's operation
// windows, one per guest in one, and maps each such guest to its
// window's resource (a parent of the guest this run). A guest whose lock
// outlived its operation (lock_stuck this run) is in no window: its
// findings are its own again.
func windowsOf(rs []snapshot.Resource, sigs []signals.Signal) ([]findings.Observation, map[string][]string) {
	var stuck map[string]bool
	for i := range sigs {
		if sigs[i].Type == signals.TypeLockStuck {
			if stuck == nil {
				stuck = map[string]bool{}
			}
			stuck[sigs[i].ResourceID] = true
		}
	}
	var obs []findings.Observation
	var parents map[string][]string
	for i := range rs {
		r := &rs[i]
		if !inWindow(r) || stuck[r.ID] {
			continue
		}
		if parents == nil {
			parents = map[string][]string{}
		}
		//mutate:window-parent ./cmd/patrold ^TestRun(OperationWindow|WindowHolds)
		parents[r.ID] = []string{WindowResourceID(r.ID)}
		obs = append(obs, operationWindow(r))
	}
	return obs, parents
}

// operationWindow is the observation of one guest's window: severity
// info (never notified as a problem), its lock and task in the evidence.
func operationWindow(r *snapshot.Resource) findings.Observation {
	g := r.Guest
	var what, ev []string
	ev = append(ev, "guest="+strconv.Quote(r.ID))
	if g.Lock != nil {
		what = append(what, "locked "+g.Lock.Name)
		ev = append(ev, "lock="+strconv.Quote(g.Lock.Name))
	}
	if t := g.Task; t != nil {
		what = append(what, "task "+t.Type+" running")
		ev = append(ev, "task="+strconv.Quote(t.Type), "upid="+strconv.Quote(t.UPID), "user="+strconv.Quote(t.User))
		if !t.StartedAt.IsZero() {
			ev = append(ev, "started_at="+t.StartedAt.UTC().Format(time.RFC3339))
		}
	}
	name := r.Name
	if name == "" {
		name = r.ID
	}
	desc := string(r.Kind) + " " + name + " (" + r.ID + ") is in an operation window (" + strings.Join(what, ", ") +
		"): its performance and reachability findings are held until the window ends."
	return findings.Observation{
		Key: findings.KeyOperationWindow, ResourceID: WindowResourceID(r.ID), ResourceKind: "patrold",
		ResourceName: prompt.SafeName("operation window of " + name), Category: findings.CategoryPerformance,
		Severity: findings.SeverityInfo, Source: findings.SourceDeterministic,
		Title:          prompt.Safe(string(r.Kind)+" "+name+" is in an operation window", maxTitleRunes),
		Description:    prompt.Safe(desc, maxSummaryRunes),
		Recommendation: prompt.Safe("Nothing to do: the window closes when the operation ends; a lock that outlives it is lock_stuck.", maxSummaryRunes),
		Evidence:       prompt.Safe(strings.Join(ev, " "), maxEvidenceRunes),
	}
}

// joinParents is the extra parents of each guest this run: its
// unroutable networks, then its window.
func joinParents(nets, windows map[string][]string) map[string][]string {
	if len(windows) == 0 {
		return nets
	}
	if len(nets) == 0 {
		return windows
	}
	out := make(map[string][]string, len(nets)+len(windows))
	for id, ps := range nets {
		out[id] = ps
	}
	for id, ps := range windows {
		out[id] = append(slices.Clip(out[id]), ps...)
	}
	return out
}
