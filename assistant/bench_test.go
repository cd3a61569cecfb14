package assistant

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/snapshot"
)

// BenchmarkCheckCondition measures the verification read over a large
// fleet (the resource is the last one).
func BenchmarkCheckCondition(b *testing.B) {
	pol, err := alerts.New(alerts.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	snap := &snapshot.Snapshot{Version: 1, TakenAt: time.Now()}
	for i := range 5000 {
		snap.Resources = append(snap.Resources, snapshot.Resource{ID: fmt.Sprintf("storage/p%d", i), Kind: snapshot.KindStorage,
			Status: "online", Metrics: snapshot.MetricsOf(map[string]float64{"usage_percent": 50})})
	}
	f := &findings.Finding{Key: "high_disk", ResourceID: "storage/p4999"}
	b.ReportAllocs()
	for b.Loop() {
		if CheckCondition(snap, pol, f).Condition != ConditionCleared {
			b.Fatal("not cleared")
		}
	}
}

// BenchmarkPlaybookSession measures a whole playbook session that ends
// fix_queued: finding load, three tool calls through the agent pipeline
// (two snapshot file reads, the write held for approval), the approval and
// transcript writes to SQLite.
func BenchmarkPlaybookSession(b *testing.B) {
	fx := newFixture(b)
	a := fx.assistant(fx.options(findings.AutonomyApproval, fx.fixAction("low")))
	b.ReportAllocs()
	for b.Loop() {
		res, err := a.Run(context.Background(), Request{FindingID: fx.finding.ID, Attempt: 1})
		if err != nil || res.ApprovalID == "" {
			b.Fatal(err)
		}
	}
}
