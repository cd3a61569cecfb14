package store_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
)

// TestColdActiveKeysKeepTheRowsForTheCommit: a fresh process (nothing
// kept) asks for the active keys before its run; it reads the active
// findings whole once and keeps them, exactly as the database reads them
// back, so its commit does not read them again. The attack: another
// process acknowledges a finding between the keys and the commit, which
// rewrites that finding's row (its severity moves); the commit must start
// from the acknowledged row, not the kept one.
func TestColdActiveKeysKeepTheRowsForTheCommit(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "f.db")
	a := fobs("vm/1", "high_cpu", findings.SeverityWarning, "cpu high")
	b := fobs("vm/2", "high_cpu", findings.SeverityWarning, "cpu high")
	commit(t, openAt(t, path), t0, true, a, b)

	fresh, other := openAt(t, path), openAt(t, path)
	if _, ok := fresh.CachedActive(); ok {
		t.Fatal("a fresh store keeps active findings before any read")
	}
	keys, err := fresh.ActiveKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := other.Active(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantKept := map[string]findings.Finding{}
	wantKeys := map[string]findings.Finding{}
	for _, f := range rows {
		wantKept[f.ID] = f
		wantKeys[f.ID] = findings.Finding{ID: f.ID, Key: f.Key, ResourceID: f.ResourceID, Category: f.Category, Status: f.Status, DetectedAt: f.DetectedAt}
	}
	gotKeys := map[string]findings.Finding{}
	for _, f := range keys {
		gotKeys[f.ID] = f
	}
	if len(keys) != 2 || !reflect.DeepEqual(gotKeys, wantKeys) {
		t.Fatalf("active keys:\n%s\nwant:\n%s", js(gotKeys), js(wantKeys))
	}
	if kept, ok := fresh.CachedActive(); !ok || !reflect.DeepEqual(kept, wantKept) {
		t.Fatalf("kept after the keys (%v):\n%s\nwant the rows:\n%s", ok, js(kept), js(wantKept))
	}

	if _, err := other.Act(ctx, rows[0].ID, findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "ops"}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	worse := func(o findings.Observation) findings.Observation {
		o.Severity = findings.SeverityCritical
		return o
	}
	commit(t, fresh, t0.Add(2*time.Minute), true, worse(a), worse(b))
	after, err := other.Active(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range after {
		if acked := f.AcknowledgedAt != nil; acked != (f.ID == rows[0].ID) || f.Severity != findings.SeverityCritical {
			t.Errorf("after the commit %s: acknowledged %v, severity %s (want the acknowledgement kept on %s only, critical)", f.ID, acked, f.Severity, rows[0].ID)
		}
	}
}
