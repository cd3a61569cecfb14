package findings

import (
	"fmt"
	"testing"
	"time"

	"github.com/patrold/patrold/model/prompt"
)

// BenchmarkObserveSteadyFleet is a steady run's re-detection: every finding
// observed again unchanged, as the commit's reconcile observes it.
func BenchmarkObserveSteadyFleet(b *testing.B) {
	const n = 10_000
	at := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	obs := make([]Observation, n)
	existing := make([]Finding, n)
	for i := range obs {
		obs[i] = Observation{
			Key: "high_cpu", ResourceID: fmt.Sprintf("vm/%d", i), ResourceKind: "vm",
			ResourceName: prompt.SafeName(fmt.Sprintf("web-%d", i)), ResourceNode: prompt.SafeName("pve1"),
			ResourceTags: []prompt.Text{prompt.SafeName("prod")},
			Category:     CategoryPerformance, Severity: SeverityWarning, Source: SourceDeterministic,
			Title: prompt.Safe("High CPU", 200), Evidence: prompt.Safe(fmt.Sprintf("cpu_percent_avg %d.5 over 900 s", 80+i%20), 500),
		}
		existing[i] = Observe(nil, obs[i], at, "run-0").Finding
	}
	b.ReportAllocs()
	run := 0
	for b.Loop() {
		run++
		now := at.Add(time.Duration(run) * time.Minute)
		for i := range obs {
			cur := existing[i]
			c := Observe(&cur, obs[i], now, "run-1")
			if c.Kind != ChangeUnchanged {
				b.Fatalf("observation %d: change %s, want unchanged", i, c.Kind)
			}
		}
	}
}
