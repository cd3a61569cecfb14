package findings

import (
	"slices"

	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// An inhibition rule says which findings of a child a finding of its
// parent explains (docs/FINDINGS.md#inhibition).
type inhibitRule struct {
	// parent is the parent finding's key; minSeverity, when set, is the
	// least severity it must have (a full storage is a critical
	// high_disk, not a warning one); maxSeverity, when set, the most (a
	// node in HA maintenance is a watch ha_error); parentKind, when set,
	// the kind of the parent's resource.
	parent      string
	minSeverity Severity
	maxSeverity Severity
	parentKind  snapshot.Kind
	// children are the keys of the child findings it explains.
	children []string
}

// inhibitRules are the causes patrold recognises, in the order they are
// tried. Each parent holds only what it explains:
//   - a node offline explains its guests' unreachable findings (and, by
//     keptBy, those the run cannot evaluate for missing metrics);
//   - a full storage (a critical high_disk) explains the disk findings of
//     the guests whose volumes are on it, never their backups;
//   - a network the patrol host cannot send to explains the unreachable
//     findings of the guests whose probed addresses are in it.
var inhibitRules = []inhibitRule{
	//mutate:inhibit-row-node-offline ./findings ^TestInhibit
	{parent: string(signals.TypeNodeOffline), children: []string{string(signals.TypeGuestUnreachable)}},
	//mutate:inhibit-row-full-storage ./findings ^TestInhibit
	{parent: string(signals.TypeHighDisk), minSeverity: SeverityCritical, parentKind: snapshot.KindStorage, children: []string{string(signals.TypeHighDisk)}},
	//mutate:inhibit-row-quorum-lost ./cmd/patrold ^TestRunQuorumLost$
	{parent: string(signals.TypeQuorumLost), parentKind: snapshot.KindCluster, children: []string{string(signals.TypeNodeOffline), string(signals.TypeGuestUnreachable)}},
	//mutate:inhibit-row-network ./findings ^TestInhibit
	{parent: KeyNetworkUnroutable, children: []string{string(signals.TypeGuestUnreachable)}},
	// An operation window holds performance and reachability, never
	// backup, disk or health findings (docs/FINDINGS.md#operation-windows).
	//mutate:inhibit-row-window ./cmd/patrold ^TestRunOperationWindow$
	{parent: KeyOperationWindow, children: []string{string(signals.TypeHighCPU), string(signals.TypeHighMemory), string(signals.TypeGuestUnreachable)}},
	//mutate:inhibit-row-ha-maintenance ./cmd/patrold ^TestRunWindowHoldsOnlyPerformanceAndReachability$
	{parent: string(signals.TypeHAError), maxSeverity: SeverityWatch, parentKind: snapshot.KindNode, children: []string{string(signals.TypeGuestUnreachable)}},
}

// ParentSource is the only source whose findings may be inhibition
// parents: a model finding adds information, it never hides any.
const ParentSource = SourceDeterministic

// parentIndex maps each resource id to the observations of obs on it
// that may be parents: deterministic ones only.
func parentIndex(obs []Observation) map[string][]int {
	byResource := map[string][]int{}
	for i := range obs {
		//mutate:inhibit-parent-provenance ./findings ^TestInhibit
		if obs[i].Source != ParentSource {
			continue
		}
		byResource[obs[i].ResourceID] = append(byResource[obs[i].ResourceID], i)
	}
	return byResource
}

// KeyOperationWindow is patrold's finding about a guest an operation
// holds (on SyntheticResourcePrefix+"window/<guest id>"), its parent.
const KeyOperationWindow = "operation_window"

// KeyNetworkUnroutable is patrold's finding about a network its prober
// had no route to (on SyntheticResourcePrefix+"network/<cidr>").
const KeyNetworkUnroutable = "network_unroutable"

// keptBy are the parent findings that explain every finding of their
// children a run keeps open because it could not evaluate it (the
// guest's metrics or reachability are missing): a node offline.
var keptBy = []string{string(signals.TypeNodeOffline)}

// KeptBy lists the keys of the parent findings that explain their
// children's findings a run cannot evaluate (docs/FINDINGS.md#inhibition).
func KeptBy() []string { return append([]string(nil), keptBy...) }

// Holder is RunInput.Holds for a run's observations (normalised, as
// Inhibit leaves them). An unobserved finding f is held by the first
// observation, on the first of its resource's parents that has one,
// that either
//   - explains f's key by the rules (as Inhibit would), or
//   - is one of KeptBy, and the run could not evaluate f (unknown).
//
// parents is as for Inhibit.
func Holder(obs []Observation, parents func(resourceID string) []string, unknown func(f *Finding) bool) func(f *Finding) string {
	byResource := parentIndex(obs)
	return func(f *Finding) string {
		if len(byResource) == 0 {
			return ""
		}
		kept := -1 // unknown is asked once, and only when it matters
		for _, p := range parents(snapshot.CanonicalID(f.ResourceID)) {
			for _, j := range byResource[p] {
				o := &obs[j]
				if !explains(o, f.Key) {
					if !slices.Contains(keptBy, o.Key) {
						continue
					}
					if kept < 0 {
						kept = 0
						//mutate:kept-only-unknown:always ./findings ^TestHolder
						if unknown(f) {
							kept = 1
						}
					}
					if kept == 0 {
						continue
					}
				}
				return ID(o.ResourceID, o.Category, o.Key)
			}
		}
		return ""
	}
}

// explains reports whether parent (an observation of this run) explains
// a child finding with key childKey.
func explains(parent *Observation, childKey string) bool {
	for _, r := range inhibitRules {
		if parent.Key != r.parent || (r.minSeverity != "" && parent.Severity.Rank() < r.minSeverity.Rank()) ||
			(r.maxSeverity != "" && parent.Severity.Rank() > r.maxSeverity.Rank()) ||
			(r.parentKind != "" && snapshot.Kind(parent.ResourceKind) != r.parentKind) {
			continue
		}
		for _, k := range r.children {
			if k == childKey {
				return true
			}
		}
	}
	return false
}

// Inhibit sets InhibitedBy on every observation whose cause is another
// observation of the same run on one of its parents. It sets it to the
// parent finding's id. parents returns the topology parents of a resource
// id (nil when it has none or is unknown). An observation is inhibited by
// the first parent, in parents order, whose finding explains it.
// Observations are normalised first (their keys are canonical).
//
// Inhibition is decided on this run's observations only: a parent
// finding is active exactly while the run that files it observes it, so
// a parent that cleared inhibits nothing.
func Inhibit(obs []Observation, parents func(resourceID string) []string) {
	for i := range obs {
		obs[i].normalize()
		obs[i].InhibitedBy = ""
	}
	byResource := parentIndex(obs)
	for i := range obs {
		o := &obs[i]
		for _, p := range parents(o.ResourceID) {
			if id := explainer(obs, byResource[p], o.Key); id != "" {
				o.InhibitedBy = id
				break
			}
		}
	}
}

// explainer is the id of the first of the parent's observations (at
// indexes) that explains a child finding with key childKey, or "".
func explainer(obs []Observation, indexes []int, childKey string) string {
	for _, j := range indexes {
		if explains(&obs[j], childKey) {
			return ID(obs[j].ResourceID, obs[j].Category, obs[j].Key)
		}
	}
	return ""
}

// InhibitRule is one inhibition rule as docs/FINDINGS.md#inhibition
// states it: a deterministic Parent finding (of at least MinSeverity and
// on a ParentKind resource, when set) explains the Children findings of
// its resource's children.
type InhibitRule struct {
	Parent      string
	MinSeverity Severity
	MaxSeverity Severity
	ParentKind  string
	Children    []string
}

// InhibitRules lists the rules, in the order they are tried.
func InhibitRules() []InhibitRule {
	out := make([]InhibitRule, len(inhibitRules))
	for i, r := range inhibitRules {
		out[i] = InhibitRule{Parent: r.parent, MinSeverity: r.minSeverity, MaxSeverity: r.maxSeverity, ParentKind: string(r.parentKind), Children: append([]string(nil), r.children...)}
	}
	return out
}
