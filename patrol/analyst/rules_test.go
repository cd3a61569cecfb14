package analyst_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/script"
	"github.com/patrold/patrold/patrol/analyst"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

func TestDetectionTurns(t *testing.T) {
	for flags, want := range map[int]int{-1: 8, 0: 8, 1: 8, 2: 11, 9: 32, 11: 38, 12: 40, 100: 40} {
		if got := analyst.DetectionTurns(flags); got != want {
			t.Errorf("DetectionTurns(%d) = %d, want %d", flags, got, want)
		}
	}
}

func TestSweepTurns(t *testing.T) {
	for n, want := range map[int]int{0: 2, 1: 3, 6: 8, 10: 12, 11: 12, 50: 12} {
		if got := analyst.SweepTurns(n); got != want {
			t.Errorf("SweepTurns(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestSeedBudget(t *testing.T) {
	if got := analyst.SeedBudget(128000, 4096); got != (128000-4096)/4 {
		t.Errorf("SeedBudget = %d", got)
	}
	if got := analyst.SeedBudget(100, 200); got != 0 {
		t.Errorf("SeedBudget with no room = %d", got)
	}
}

// Watch flags: a metric within watchMargin points at or below its trigger,
// on a resource without that signal, with the detectors' staleness rules.
func TestTriageWatchFlags(t *testing.T) {
	res := func(id string, kind snapshot.Kind, status string, metrics map[string]float64) snapshot.Resource {
		return snapshot.Resource{ID: id, Kind: kind, Status: status, Metrics: snapshot.MetricsOf(metrics)}
	}
	snap := &snapshot.Snapshot{Version: 1, TakenAt: testNow, Resources: []snapshot.Resource{
		res("node/a", snapshot.KindNode, "online", map[string]float64{"cpu_percent": 65, "memory_percent": 74.9}), // cpu at trigger-5: watch; memory just outside
		res("node/b", snapshot.KindNode, "online", map[string]float64{"cpu_percent": 70}),                         // at trigger: not a signal, a watch
		res("node/c", snapshot.KindNode, "online", map[string]float64{"cpu_percent": 70.5}),                       // a signal, not a watch
		res("node/d", snapshot.KindNode, "offline", map[string]float64{"cpu_percent": 68}),                        // stale metrics; node_offline
		res("vm/1", snapshot.KindVM, "stopped", map[string]float64{"cpu_percent": 68, "disk_percent": 72}),        // stale
		res("vm/2", snapshot.KindVM, "paused", map[string]float64{"cpu_percent": 68, "disk_percent": 72}),         // paused: disk only
		res("storage/s", snapshot.KindStorage, "online", map[string]float64{"usage_percent": 71}),                 // usage watch
		res("node/e", snapshot.KindNode, "online", map[string]float64{"cpu_percent": 66, "cpu_percent_avg": 50}),  // the sustained value rules
	}}
	pol := defaultPolicy(t)
	sigs := signals.Detect(snap, pol, nil)
	tri := analyst.NewTriage(snap, sigs, pol)
	var got []string
	for _, w := range tri.Watches {
		got = append(got, string(w.Type)+" "+w.ResourceID+" "+w.Metric)
	}
	want := []string{
		"high_cpu node/a cpu_percent", "high_cpu node/b cpu_percent",
		"high_disk vm/2 disk_percent", "high_disk storage/s usage_percent",
	}
	if !slices.Equal(got, want) {
		t.Errorf("watches\n got %v\nwant %v", got, want)
	}
	if tri.Flags() != len(sigs)+len(want) || len(sigs) != 2 {
		t.Errorf("flags %d, signals %v", tri.Flags(), refs(sigs))
	}
	if tri.Flagged[0] != "node/d" || tri.Flagged[1] != "node/c" {
		t.Errorf("the resources with a signal come first, critical first: %v", tri.Flagged)
	}
}

func TestTriageOrdersCriticalFirst(t *testing.T) {
	snap := loadSnap(t, "small-faults.json")
	in := input(t, snap)
	tri := analyst.NewTriage(snap, in.Signals, in.Thresholds)
	want := []string{"storage/pve1/local-zfs", "disk/pve1/sda", "node/pve2", "vm/101", "vm/102", "storage/pve2/backup", "disk/pve1/sdb"}
	if !slices.Equal(tri.Flagged, want) || tri.Flags() != 9 {
		t.Errorf("flagged %v flags %d", tri.Flagged, tri.Flags())
	}
}

func TestOptionsValidate(t *testing.T) {
	ok := analyst.Options{Provider: &capture{}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("minimal options: %v", err)
	}
	for name, c := range map[string]struct {
		mut  func(*analyst.Options)
		want string
	}{
		"provider":       {func(o *analyst.Options) { o.Provider = nil }, "provider: required"},
		"window":         {func(o *analyst.Options) { o.ContextWindow = 1000 }, "context_window: 1000 is below the minimum 8192"},
		"negative":       {func(o *analyst.Options) { o.ContextWindow = -1 }, "context_window: -1 must not be negative"},
		"max output":     {func(o *analyst.Options) { o.ContextWindow = 10000; o.MaxOutputTokens = 6000 }, "max_output_tokens: 6000 must be below half"},
		"budget":         {func(o *analyst.Options) { o.Budget.PerRunUSD = -1 }, "model.budget.per_run_usd: -1"},
		"ledger":         {func(o *analyst.Options) { o.Budget.PerDayUSD = 1; o.Model = "m"; o.Prices = model.Prices{"m": {}} }, "spend ledger is required"},
		"price":          {func(o *analyst.Options) { o.Budget.PerRunUSD = 1; o.Model = "gpt-x" }, `prices: no price for model "gpt-x"`},
		"price no model": {func(o *analyst.Options) { o.Budget.PerRunUSD = 1 }, `prices: no price for model ""`},
	} {
		o := ok
		c.mut(&o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
		if _, nerr := analyst.New(o); nerr == nil {
			t.Errorf("%s: New accepted invalid options", name)
		}
	}
}

func TestAnalyzeRejectsIncompleteInput(t *testing.T) {
	a, c := scripted(t, []script.Turn{text("x")}, nil)
	in := input(t, loadSnap(t, "small-faults.json"))
	in.Snapshot = nil
	if _, err := a.Analyze(t.Context(), in); err == nil || !strings.Contains(err.Error(), "snapshot: required") {
		t.Errorf("nil snapshot: %v", err)
	}
	in = input(t, loadSnap(t, "small-faults.json"))
	in.Thresholds = nil
	if _, err := a.Analyze(t.Context(), in); err == nil || !strings.Contains(err.Error(), "thresholds: required") {
		t.Errorf("nil thresholds: %v", err)
	}
	if c.calls() != 0 {
		t.Errorf("model called on invalid input")
	}
}
