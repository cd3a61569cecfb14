package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
)

// BenchmarkApplyState applies a standby's share of one run: the state
// changes a leader captured while filing 200 findings (findings, their
// events, the run), each in its own transaction as the follower does.
func BenchmarkApplyState(b *testing.B) {
	ctx := context.Background()
	leader := openStore(b)
	if err := leader.EnableCapture(ctx, "state.changes", "a", 1); err != nil {
		b.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var obs []findings.Observation
	for i := range 200 {
		obs = append(obs, fobs(fmt.Sprintf("vm-%d", i), "high_cpu", findings.SeverityWarning, "cpu"))
	}
	commit(b, leader, at, true, obs...)
	rows, err := leader.PendingEvents(ctx, 10000)
	if err != nil {
		b.Fatal(err)
	}
	var changes []contracts.StateChange
	for _, r := range rows {
		if r.Type != contracts.TypeStateChange {
			continue
		}
		c, err := contracts.DecodeStateChange(r.Data)
		if err != nil {
			b.Fatal(err)
		}
		changes = append(changes, c)
	}
	standby := openStore(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c := changes[i%len(changes)]
		if _, err := standby.ApplyState(ctx, uint64(i+1), "b", c, at); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(changes)), "changes/run")
}
