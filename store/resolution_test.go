package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
)

// The net has the last word. A finding whose condition this run's
// detection produced stays open in a complete run, even with a (forged)
// model verdict asking to resolve it. The same verdict on a condition
// detection did not produce resolves it.
func TestDetectedConditionIsNeverResolved(t *testing.T) {
	st := openStore(t)
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	detected := fobs("node/a", "high_cpu", findings.SeverityWarning, "cpu 91")
	other := fobs("node/b", "high_cpu", findings.SeverityWarning, "cpu 92")
	commit(t, st, t0, true, detected, other)
	dID, oID := detected.Normalize(), other.Normalize()

	t1 := t0.Add(time.Hour)
	runID := findings.NewID(t1)
	changes, err := st.CommitRun(context.Background(), findings.RunInput{
		RunID: runID, Now: t1, Complete: true, Reconcile: true, Policy: findings.DefaultPublishPolicy(),
		Check: func(f *findings.Finding) findings.Check {
			if f.ID == dID {
				return findings.CheckDetected
			}
			return findings.CheckPresent // no authoritative detector: only a verdict resolves it
		},
		Resolve: map[string]string{dID: findings.ResolveModelVerdict, oID: findings.ResolveModelVerdict},
	}, func([]findings.Change) (findings.RunRecord, []findings.OutboxDraft, error) {
		return findings.RunRecord{ID: runID, Trigger: "manual", Status: "issues_found", Analysis: "model", StartedAt: t1}, nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].Finding.ID != oID || changes[0].Kind != findings.ChangeResolved {
		t.Fatalf("changes %+v, want only %s resolved", changes, oID)
	}
	got, err := st.Get(context.Background(), dID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != findings.StatusActive || got.ResolveReason != "" {
		t.Fatalf("detected finding: status %s reason %q, want active", got.Status, got.ResolveReason)
	}
}
