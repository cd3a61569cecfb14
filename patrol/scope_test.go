package patrol_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot"
)

// TestScopedRunResolvesNothingOutsideItsScope is the attack on the scope
// rule: a scoped run over one resource, with the rest of the fleet
// missing from the source, resolves nothing but what its scope says
// cleared, and files only for its scope.
func TestScopedRunResolvesNothingOutsideItsScope(t *testing.T) {
	e := newEnv(t)
	pol, _ := alerts.New(alerts.Settings{})
	hot := func(id, parent string, cpu float64) snapshot.Resource {
		return snapshot.Resource{ID: id, Kind: snapshot.KindVM, Parent: parent, Status: snapshot.StatusRunning,
			Metrics: snapshot.Metrics{{Name: snapshot.MetricCPU, Value: cpu}}}
	}
	fleet := []snapshot.Resource{
		{ID: "node/a", Kind: snapshot.KindNode, Status: snapshot.StatusOnline, Metrics: snapshot.Metrics{{Name: snapshot.MetricCPU, Value: 99}}},
		hot("vm/1", "node/a", 99), hot("vm/2", "node/a", 99), hot("vm/3", "node/b", 99),
	}
	var serve []snapshot.Resource
	r, err := patrol.New(patrol.Options{Store: e.store, Now: func() time.Time { return time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC) },
		Settings: func() patrol.Settings {
			return patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy(),
				Source: snapshot.SourceFunc(func(context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
					return &snapshot.Snapshot{Version: 1, Resources: serve}, nil, nil
				})}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	serve = fleet
	if rep, err := r.Run(ctx, patrol.TriggerManual, patrol.RunOptions{}); err != nil || len(rep.Findings) != 4 {
		t.Fatalf("full run: %v %+v", err, rep)
	}
	// The source now sees vm/1 alone, cooled down, and a new hot vm/9.
	serve = []snapshot.Resource{hot("vm/1", "node/a", 5), hot("vm/9", "node/z", 99)}
	rep, err := r.Run(ctx, patrol.TriggerAPI, patrol.RunOptions{Scope: []string{"VM/1"}, Reason: "alert HighCPU"})
	if err != nil {
		t.Fatal(err)
	}
	want := &patrol.Scope{Resources: []string{"vm/1"}, Reason: "alert HighCPU", Patrolled: 1}
	if !reflect.DeepEqual(rep.Scope, want) || rep.Trigger != patrol.TriggerAPI {
		t.Fatalf("scope %+v trigger %s, want %+v", rep.Scope, rep.Trigger, want)
	}
	vm1 := findings.ID("vm/1", findings.CategoryPerformance, "high_cpu")
	if !reflect.DeepEqual(rep.Resolved, []string{vm1}) || len(rep.Findings) != 1 {
		t.Fatalf("scoped run resolved %v, findings %+v; want only vm/1's", rep.Resolved, rep.Findings)
	}
	active, err := e.store.List(ctx, findings.ListFilter{Status: "active"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range active {
		ids = append(ids, f.ResourceID)
	}
	slices.Sort(ids)
	if !reflect.DeepEqual(ids, []string{"node/a", "vm/2", "vm/3"}) {
		t.Fatalf("active after the scoped run: %v", ids)
	}
	// Its runs.completed event records the trigger and the scope.
	ev, err := e.store.PendingEvents(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	var done []patrol.RunCompleted
	for _, x := range ev {
		if x.Type == contracts.TypeRunCompleted {
			var rc patrol.RunCompleted
			if err := json.Unmarshal(x.Data, &rc); err != nil {
				t.Fatal(err)
			}
			done = append(done, rc)
		}
	}
	if len(done) != 2 {
		t.Fatalf("%d run events, want 2", len(done))
	}
	wantEv := patrol.RunCompleted{RunID: rep.RunID, Trigger: patrol.TriggerAPI, Status: rep.Status, StatusReasons: rep.StatusReasons,
		Analysis: rep.Analysis, DurationMS: done[1].DurationMS, Resources: rep.Resources, Signals: len(rep.Signals),
		Findings: map[string]int{"resolved": 1}, Resolved: 1, Errors: rep.Errors, Scope: want}
	if !reflect.DeepEqual(done[1], wantEv) {
		t.Fatalf("scoped run's event\n got %+v\nwant %+v", done[1], wantEv)
	}
	if done[0].Scope != nil {
		t.Fatalf("the full run's event has a scope: %+v", done[0].Scope)
	}
}
