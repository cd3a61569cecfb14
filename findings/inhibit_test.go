package findings_test

import (
	"reflect"
	"testing"

	"github.com/patrold/patrold/findings"
)

// TestInhibitRules: each rule holds its children and nothing else; a
// warning high_disk is not a full storage, nor a critical one on a node;
// a full storage holds its guests' disk findings, never their backups;
// a degraded pool holds nothing; a model finding is never a parent,
// whatever its key; an unrelated key on a child, or a child of another
// parent, is never held.
func TestInhibitRules(t *testing.T) {
	ob := func(res, kind, key string, cat findings.Category, sev findings.Severity) findings.Observation {
		return findings.Observation{ResourceID: res, ResourceKind: kind, Key: key, Category: cat, Severity: sev, Source: findings.SourceDeterministic}
	}
	model := func(o findings.Observation) findings.Observation { o.Source = findings.SourceModel; return o }
	obs := []findings.Observation{
		ob("node/a", "node", "node_offline", findings.CategoryReliability, findings.SeverityCritical),
		ob("vm/1", "vm", "guest_unreachable", findings.CategoryReliability, findings.SeverityWarning),
		ob("vm/1", "vm", "high_memory", findings.CategoryPerformance, findings.SeverityWarning),
		ob("storage/full", "storage", "high_disk", findings.CategoryCapacity, findings.SeverityCritical),
		ob("vm/2", "vm", "backup_failed", findings.CategoryBackup, findings.SeverityWarning),
		ob("vm/2", "vm", "high_disk", findings.CategoryCapacity, findings.SeverityWarning),
		ob("storage/warm", "storage", "high_disk", findings.CategoryCapacity, findings.SeverityWarning),
		ob("vm/3", "vm", "high_disk", findings.CategoryCapacity, findings.SeverityWarning),
		ob("storage/pool", "storage", "zfs_pool_degraded", findings.CategoryReliability, findings.SeverityCritical),
		ob("vm/4", "vm", "guest_unreachable", findings.CategoryReliability, findings.SeverityWarning),
		ob("vm/5", "vm", "guest_unreachable", findings.CategoryReliability, findings.SeverityWarning),
		{ResourceID: "vm/1", Key: "backup_failed", InhibitedBy: "stale"},                                     // cleared: its parent explains no backup
		ob("vm/6", "vm", "guest_unreachable", findings.CategoryReliability, findings.SeverityWarning),        // two causes: the first parent's
		model(ob("node/m", "node", "high_disk", findings.CategoryCapacity, findings.SeverityCritical)),       // a model's key on a node
		model(ob("node/m", "node", "node_offline", findings.CategoryReliability, findings.SeverityCritical)), // a model's net key
		ob("vm/7", "vm", "guest_unreachable", findings.CategoryReliability, findings.SeverityWarning),
		ob("vm/7", "vm", "backup_stale", findings.CategoryBackup, findings.SeverityWarning),
		ob("vm/7", "vm", "high_disk", findings.CategoryCapacity, findings.SeverityWarning),
		ob("patrold/network/10.0.0.0/24", "patrold", "network_unroutable", findings.CategoryReliability, findings.SeverityWarning),
		ob("vm/8", "vm", "guest_unreachable", findings.CategoryReliability, findings.SeverityWarning),
		ob("node/hot", "node", "high_disk", findings.CategoryCapacity, findings.SeverityCritical),
		ob("vm/9", "vm", "high_disk", findings.CategoryCapacity, findings.SeverityWarning),
	}
	parents := map[string][]string{
		"vm/1": {"node/a"}, "vm/2": {"node/b", "storage/full"}, "vm/3": {"storage/warm"},
		"vm/4": {"storage/pool"}, "vm/5": {"node/b"}, "storage/full": {"node/a"}, "vm/6": {"node/a", "storage/full"},
		"vm/7": {"node/m"}, "vm/8": {"patrold/network/10.0.0.0/24"}, "vm/9": {"node/hot"},
	}
	findings.Inhibit(obs, func(id string) []string { return parents[id] })
	node := findings.ID("node/a", findings.CategoryReliability, "node_offline")
	full := findings.ID("storage/full", findings.CategoryCapacity, "high_disk")
	network := findings.ID("patrold/network/10.0.0.0/24", findings.CategoryReliability, "network_unroutable")
	got := make([]string, len(obs))
	for i := range obs {
		got[i] = obs[i].InhibitedBy
	}
	want := []string{"", node, "", "", "", full, "", "", "", "", "", "", node, "", "", "", "", "", "", network, "", ""}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("inhibited_by\n%q\nwant\n%q", got, want)
	}
}

// TestGateRefusesInhibited: an inhibited finding is never investigated.
func TestGateRefusesInhibited(t *testing.T) {
	f := findings.Finding{Status: findings.StatusActive, Severity: findings.SeverityCritical, InhibitedBy: "0123456789abcdef"}
	if ok, why := findings.DefaultGate().ShouldInvestigate(&f, findings.AutonomyFull, f.DetectedAt); ok || why != findings.RefuseInactive {
		t.Fatalf("inhibited: %v %q", ok, why)
	}
	f.InhibitedBy = ""
	if ok, why := findings.DefaultGate().ShouldInvestigate(&f, findings.AutonomyFull, f.DetectedAt); !ok {
		t.Fatalf("released: %v %q", ok, why)
	}
}

// TestHolderOfUnobservedFindings: an active finding a run did not
// observe is held by a parent observation that explains its key, or by
// a node offline when the run could not evaluate it; a finding the run
// could evaluate, one under an online node and one outside a scoped
// run are held by nothing, and a hold that no longer applies is
// cleared.
func TestHolderOfUnobservedFindings(t *testing.T) {
	obs := []findings.Observation{
		{ResourceID: "node/a", Key: "node_offline", Category: findings.CategoryReliability, Severity: findings.SeverityCritical, Source: findings.SourceDeterministic},
		{ResourceID: "storage/full", ResourceKind: "storage", Key: "high_disk", Category: findings.CategoryCapacity, Severity: findings.SeverityCritical, Source: findings.SourceDeterministic},
		// A model's node_offline holds nothing, even what the run cannot evaluate.
		{ResourceID: "node/m", Key: "node_offline", Category: findings.CategoryReliability, Severity: findings.SeverityCritical, Source: findings.SourceModel},
	}
	parents := map[string][]string{"vm/1": {"node/a"}, "vm/2": {"node/b", "storage/full"}, "vm/3": {"node/b"}, "vm/4": {"node/a"}, "vm/5": {"node/m"}}
	unknown := map[string]bool{"vm/1": true, "vm/3": true, "vm/5": true}
	holds := findings.Holder(obs, func(id string) []string { return parents[id] }, func(f *findings.Finding) bool { return unknown[f.ResourceID] })
	node := findings.ID("node/a", findings.CategoryReliability, "node_offline")
	full := findings.ID("storage/full", findings.CategoryCapacity, "high_disk")
	f := func(res, key string, cat findings.Category, by string) findings.Finding {
		return findings.Finding{ID: findings.ID(res, cat, key), ResourceID: res, Key: key, Category: cat, Status: findings.StatusActive, InhibitedBy: by}
	}
	in := findings.RunInput{Holds: holds, InScope: func(id string) bool { return id != "vm/9" }}
	cases := []struct {
		f    findings.Finding
		want string // the hold recorded; "-" for no change
	}{
		{f("vm/1", "high_cpu", findings.CategoryPerformance, ""), node},         // missing metrics, node offline
		{f("vm/2", "high_disk", findings.CategoryCapacity, ""), full},           // the rules, evaluated or not
		{f("vm/2", "guest_unreachable", findings.CategoryReliability, ""), "-"}, // a full storage explains no reachability
		{f("vm/5", "high_cpu", findings.CategoryPerformance, ""), "-"},          // unknown, under a model's node_offline
		{f("vm/3", "high_cpu", findings.CategoryPerformance, ""), "-"},          // unknown, but its node is up
		{f("vm/4", "slow-queries", findings.CategoryPerformance, node), ""},     // evaluated: the old hold is cleared
		{f("vm/9", "high_cpu", findings.CategoryPerformance, "gone"), "-"},      // outside the scope: left as it is
		{f("vm/2", "backup_failed", findings.CategoryBackup, ""), "-"},          // nor backups
		{f("vm/4", "high_memory", findings.CategoryPerformance, ""), "-"},       // not unknown, nothing explains it
	}
	for _, c := range cases {
		got, ok := in.Hold(c.f)
		switch {
		case c.want == "-" && ok:
			t.Errorf("%s %s: recorded %+v, want no change", c.f.ResourceID, c.f.Key, got.Finding.InhibitedBy)
		case c.want != "-" && !ok:
			t.Errorf("%s %s: no change, want held by %q", c.f.ResourceID, c.f.Key, c.want)
		case ok:
			prev := c.f
			want := findings.Change{Finding: c.f, Kind: findings.ChangeUnchanged, Previous: &prev}
			want.Finding.InhibitedBy = c.want
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: change %+v, want %+v", c.f.ResourceID, c.f.Key, got, want)
			}
		}
	}
}
