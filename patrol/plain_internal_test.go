package patrol

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/store"
)

// TestRunEndsARoundOfPlainText: the runner's plain-text memo holds the
// texts of its last run only, and a runner not asked to keep them (a
// one-shot run) keeps none. The attack is runs over fleets whose texts
// differ (another name each time): a memo whose round never ends holds
// every run's texts, and grows with every run a daemon makes.
func TestRunEndsARoundOfPlainText(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "patrold.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pol, err := alerts.New(alerts.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	opts := Options{Store: st, Now: func() time.Time { return now }, KeepPlainText: true, Settings: func() Settings {
		return Settings{Policy: pol, Publish: findings.DefaultPublishPolicy()}
	}}
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.KeepPlainText = false
	once, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	fleet := func(name string) *snapshot.Snapshot {
		return &snapshot.Snapshot{Version: 1, TakenAt: now, Resources: []snapshot.Resource{{ID: "vm/101", Kind: snapshot.KindVM,
			Name: name, Status: "running", Metrics: snapshot.MetricsOf(map[string]float64{"disk_percent": 97})}}}
	}
	var lens []int
	for _, name := range []string{"web-1", "web-2", "web-3"} {
		rep, err := r.Run(ctx, TriggerManual, RunOptions{Snapshot: fleet(name)})
		if err != nil || len(rep.Signals) == 0 {
			t.Fatalf("run over %s: %d signals, %v", name, len(rep.Signals), err)
		}
		lens = append(lens, r.plain.Len())
	}
	if lens[0] == 0 || lens[1] != lens[0] || lens[2] != lens[0] {
		t.Errorf("texts remembered after each run %v, want the same number each time (one run's)", lens)
	}
	if _, err := once.Run(ctx, TriggerManual, RunOptions{Snapshot: fleet("web-4")}); err != nil || once.plain.Len() != 0 {
		t.Errorf("a runner not keeping plain text remembers %d texts (%v)", once.plain.Len(), err)
	}
}
