package findings_test

import (
	"reflect"
	"testing"

	"github.com/patrold/patrold/findings"
)

// TestInhibitRules: each rule holds its children and nothing else; a
// warning high_disk is not a full storage; an unrelated key on a child,
// or a child of another parent, is never held.
func TestInhibitRules(t *testing.T) {
	ob := func(res, key string, cat findings.Category, sev findings.Severity) findings.Observation {
		return findings.Observation{ResourceID: res, Key: key, Category: cat, Severity: sev}
	}
	obs := []findings.Observation{
		ob("node/a", "node_offline", findings.CategoryReliability, findings.SeverityCritical),
		ob("vm/1", "guest_unreachable", findings.CategoryReliability, findings.SeverityWarning),
		ob("vm/1", "high_memory", findings.CategoryPerformance, findings.SeverityWarning),
		ob("storage/full", "high_disk", findings.CategoryCapacity, findings.SeverityCritical),
		ob("vm/2", "backup_failed", findings.CategoryBackup, findings.SeverityWarning),
		ob("vm/2", "guest_unreachable", findings.CategoryReliability, findings.SeverityWarning),
		ob("storage/warm", "high_disk", findings.CategoryCapacity, findings.SeverityWarning),
		ob("vm/3", "backup_stale", findings.CategoryBackup, findings.SeverityWarning),
		ob("storage/pool", "zfs_pool_degraded", findings.CategoryReliability, findings.SeverityWarning),
		ob("vm/4", "backup_stale", findings.CategoryBackup, findings.SeverityWarning),
		ob("vm/5", "guest_unreachable", findings.CategoryReliability, findings.SeverityWarning),
		{ResourceID: "vm/1", Key: "backup_failed", InhibitedBy: "stale"},                        // cleared: its parent explains no backup
		ob("vm/6", "guest_unreachable", findings.CategoryReliability, findings.SeverityWarning), // two causes: the first parent's
	}
	parents := map[string][]string{
		"vm/1": {"node/a"}, "vm/2": {"node/b", "storage/full"}, "vm/3": {"storage/warm"},
		"vm/4": {"storage/pool"}, "vm/5": {"node/b"}, "storage/full": {"node/a"}, "vm/6": {"node/a", "storage/full"},
	}
	findings.Inhibit(obs, func(id string) []string { return parents[id] })
	node := findings.ID("node/a", findings.CategoryReliability, "node_offline")
	full := findings.ID("storage/full", findings.CategoryCapacity, "high_disk")
	pool := findings.ID("storage/pool", findings.CategoryReliability, "zfs_pool_degraded")
	got := make([]string, len(obs))
	for i := range obs {
		got[i] = obs[i].InhibitedBy
	}
	want := []string{"", node, "", "", full, full, "", "", "", pool, "", "", node}
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
