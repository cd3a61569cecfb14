package analyst

import (
	"sort"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// Watch is a near-threshold flag: a metric within watchMargin points
// below its trigger, on a resource with no signal of that type.
type Watch struct {
	Type       signals.Type `json:"type"`
	ResourceID string       `json:"resource_id"`
	Metric     string       `json:"metric"`
	Value      float64      `json:"value"`
	Trigger    float64      `json:"trigger"`
}

// Triage is the deterministic narrowing that feeds the seed context: the
// run's signals plus the watch flags.
type Triage struct {
	Signals []signals.Signal
	Watches []Watch
	// Flagged lists the ids of flagged resources, most severe first
	// (critical signals, then warnings, then watch flags), snapshot order
	// within a rank.
	Flagged []string
}

// Flags is the number of signals plus watch flags: the input of
// DetectionTurns.
func (t *Triage) Flags() int { return len(t.Signals) + len(t.Watches) }

// NewTriage computes the triage of snap: sigs are the run's signals, th the
// effective thresholds. It is pure.
func NewTriage(snap *snapshot.Snapshot, sigs []signals.Signal, th signals.Thresholds) *Triage {
	t := &Triage{Signals: sigs}
	has := make(map[signals.Key]bool, len(sigs))
	rank := map[string]int{}
	for _, s := range sigs {
		id := snapshot.CanonicalID(s.ResourceID)
		has[signals.Key{Type: s.Type, ResourceID: id}] = true
		r := 1
		if s.Severity == signals.SeverityCritical {
			r = 2
		}
		rank[id] = max(rank[id], r)
	}
	for i := range snap.Resources {
		res := &snap.Resources[i]
		id := snapshot.CanonicalID(res.ID)
		for _, w := range watches(res, th.Resolve(res)) {
			if has[signals.Key{Type: w.Type, ResourceID: id}] {
				continue
			}
			w.ResourceID = res.ID
			t.Watches = append(t.Watches, w)
			rank[id] = max(rank[id], 0)
		}
	}
	order := make(map[string]int, len(snap.Resources))
	for i := range snap.Resources {
		id := snapshot.CanonicalID(snap.Resources[i].ID)
		if _, ok := rank[id]; ok {
			order[id] = i
			t.Flagged = append(t.Flagged, id)
		}
	}
	sort.SliceStable(t.Flagged, func(i, j int) bool {
		a, b := t.Flagged[i], t.Flagged[j]
		if rank[a] != rank[b] {
			return rank[a] > rank[b]
		}
		return order[a] < order[b]
	})
	return t
}

// watches lists the near-threshold metrics of one resource, mirroring
// which metrics the detectors read (stale metrics are skipped).
func watches(r *snapshot.Resource, th alerts.Thresholds) []Watch {
	if r.MetricsStale() {
		return nil
	}
	type probe struct {
		typ    signals.Type
		metric string
		t      alerts.Threshold
	}
	var probes []probe
	switch {
	case r.Kind == snapshot.KindNode:
		probes = []probe{{signals.TypeHighCPU, snapshot.MetricCPU, th.CPU}, {signals.TypeHighMemory, snapshot.MetricMemory, th.Memory}}
	case r.Kind.Guest():
		if r.Status == snapshot.StatusRunning {
			probes = []probe{{signals.TypeHighCPU, snapshot.MetricCPU, th.CPU}, {signals.TypeHighMemory, snapshot.MetricMemory, th.Memory}}
		}
		probes = append(probes, probe{signals.TypeHighDisk, snapshot.MetricDisk, th.Disk})
	case r.Kind == snapshot.KindStorage:
		probes = []probe{{signals.TypeHighDisk, snapshot.MetricUsage, th.Disk}}
	}
	var out []Watch
	for _, p := range probes {
		v, avg, ok := r.Metric(p.metric)
		if !ok || p.t.Trigger <= 0 || v > p.t.Trigger || v < p.t.Trigger-watchMargin {
			continue
		}
		name := p.metric
		if avg {
			name += "_avg"
		}
		out = append(out, Watch{Type: p.typ, Metric: name, Value: v, Trigger: p.t.Trigger})
	}
	return out
}
