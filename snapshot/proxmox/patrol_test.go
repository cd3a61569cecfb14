package proxmox

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/store"
)

// runOutcome is the part of a run report that the source decides.
type runOutcome struct {
	Status        string           `json:"status"`
	StatusReasons []string         `json:"status_reasons"`
	Resources     map[string]int   `json:"resources"`
	Signals       []signals.Signal `json:"signals"`
	Errors        []string         `json:"errors"`
	Resolved      []string         `json:"resolved"`
}

// TestPatrolRunOverCluster runs a real patrol (SQLite store, default
// thresholds) over the fake cluster and checks what it detects, then runs
// again with a node timing out: the run is degraded, incomplete, and
// resolves nothing.
func TestPatrolRunOverCluster(t *testing.T) {
	fake, srv := newFake(t)
	o := testOptions(t, srv)
	o.Timeout = 300 * time.Millisecond
	src := newSource(t, o)
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "patrold.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pol, err := alerts.New(alerts.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	runner, err := patrol.New(patrol.Options{Store: st, Now: func() time.Time { return evalTime },
		Settings: func() patrol.Settings {
			return patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy(), Source: src}
		}})
	if err != nil {
		t.Fatal(err)
	}
	run := func() runOutcome {
		rep, err := runner.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{})
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		return runOutcome{Status: rep.Status, StatusReasons: rep.StatusReasons, Resources: rep.Resources,
			Signals: rep.Signals, Errors: rep.Errors, Resolved: rep.Resolved}
	}
	golden(t, "run.golden.json", run())

	fake.hang["pve2"] = true
	second := run()
	if second.Status != "degraded" || len(second.Resolved) != 0 {
		t.Errorf("run with pve2 timing out: status %s, resolved %v; want degraded, nothing resolved", second.Status, second.Resolved)
	}
	golden(t, "run-timeout.golden.json", second)
}
