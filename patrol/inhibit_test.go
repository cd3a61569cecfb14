package patrol_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot"
)

// TestInhibitedFindingsCounted: a run over an offline node with two
// unreachable guests on it (and one on another node) holds exactly the
// two, and the gauge says so; the next run, the node back, holds none.
func TestInhibitedFindingsCounted(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	pol, _ := alerts.New(alerts.Settings{})
	off := false
	unreachable := func(id, parent string) snapshot.Resource {
		return snapshot.Resource{ID: id, Kind: snapshot.KindVM, Parent: parent, Status: snapshot.StatusRunning, Reachable: &off}
	}
	status := snapshot.StatusOffline
	r, err := patrol.New(patrol.Options{Store: e.store, Metrics: patrol.NewMetrics(reg),
		Now: func() time.Time { return time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC) },
		Settings: func() patrol.Settings {
			return patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy(),
				Source: snapshot.SourceFunc(func(context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
					return &snapshot.Snapshot{Version: 1, Resources: []snapshot.Resource{
						{ID: "node/a", Kind: snapshot.KindNode, Status: status}, {ID: "node/b", Kind: snapshot.KindNode, Status: snapshot.StatusOnline},
						unreachable("vm/1", "node/a"), unreachable("vm/2", "NODE/a"), unreachable("vm/3", "node/b"),
					}}, nil, nil
				})}
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2", "0"} {
		if _, err := r.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{}); err != nil {
			t.Fatal(err)
		}
		exp := `
# HELP patrold_patrol_inhibited_findings Active findings of the last run held (not published or investigated) because an active parent finding explains them.
# TYPE patrold_patrol_inhibited_findings gauge
patrold_patrol_inhibited_findings ` + want + "\n"
		if err := testutil.GatherAndCompare(reg, strings.NewReader(exp), "patrold_patrol_inhibited_findings"); err != nil {
			t.Fatal(err)
		}
		status = snapshot.StatusOnline
	}
}
