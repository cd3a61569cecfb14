package patrol_test

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/store/storetest"
)

// silentAnalyst is a model that files nothing: every signal is missed.
type silentAnalyst struct{}

func (silentAnalyst) Analyze(context.Context, patrol.AnalysisInput) (*patrol.Analysis, error) {
	return &patrol.Analysis{}, nil
}

// TestRunMetrics: skipped runs are counted by reason, the last success
// and the model's missed signals are recorded, and the duration covers
// the whole run up to its commit.
func TestRunMetrics(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	m := patrol.NewMetrics(reg)
	block, entered := make(chan struct{}), make(chan struct{})
	pol, _ := alerts.New(alerts.Settings{})
	var mu sync.Mutex
	clock := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	r, _ := patrol.New(patrol.Options{Store: e.store, Metrics: m, Now: now, Settings: func() patrol.Settings {
		return patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy(), Analyst: silentAnalyst{},
			Source: snapshot.SourceFunc(func(ctx context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
				close(entered)
				<-block
				mu.Lock()
				clock = clock.Add(3 * time.Second) // the run takes 3s of the clock
				mu.Unlock()
				return &snapshot.Snapshot{Version: 1, Resources: []snapshot.Resource{node(99)}}, nil, nil
			})}
	}})
	var wg sync.WaitGroup
	wg.Add(1)
	var first *patrol.Report
	go func() {
		defer wg.Done()
		first, _ = r.Run(context.Background(), patrol.TriggerScheduled, patrol.RunOptions{})
	}()
	<-entered
	for _, trig := range []patrol.Trigger{patrol.TriggerScheduled, patrol.TriggerAPI, patrol.TriggerAPI} {
		if _, err := r.Run(context.Background(), trig, patrol.RunOptions{}); !errors.Is(err, patrol.ErrBusy) {
			t.Fatalf("%s while busy: %v", trig, err)
		}
	}
	close(block)
	wg.Wait()
	if first == nil || first.Status == patrol.StatusError || len(first.Signals) != 1 || len(first.UnmatchedSignals) != 1 {
		t.Fatalf("run: %+v", first)
	}
	got := map[string]float64{}
	for _, reason := range []string{"tick_overlap", "api_conflict", "startup_overlap", "manual_overlap"} {
		got[reason] = gatheredLabel(t, reg, "patrold_patrol_skipped_ticks_total", "reason", reason)
	}
	if want := map[string]float64{"tick_overlap": 1, "api_conflict": 2, "startup_overlap": 0, "manual_overlap": 0}; !equalMap(got, want) {
		t.Fatalf("skipped by reason: %v, want %v", got, want)
	}
	wantGauges := map[string]float64{
		"patrold_patrol_last_success_timestamp_seconds": float64(first.FinishedAt.Unix()),
		"patrold_model_signals_total":                   1,
		"patrold_model_missed_signals_total":            1,
		"patrold_patrol_run_duration_seconds_sum":       3,
	}
	for name, want := range wantGauges {
		if v := gathered(t, reg, name); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
}

func equalMap(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func gatheredLabel(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{%s=%q}", name, label, value)
	return 0
}

// gathered returns a single-series metric's value (histograms: name_sum).
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		m := mf.GetMetric()
		switch {
		case mf.GetName() == name && len(m) == 1 && m[0].Gauge != nil:
			return m[0].GetGauge().GetValue()
		case mf.GetName() == name && len(m) == 1 && m[0].Counter != nil:
			return m[0].GetCounter().GetValue()
		case mf.GetName()+"_sum" == name && len(m) == 1 && m[0].Histogram != nil:
			return m[0].GetHistogram().GetSampleSum()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestRunPrunesHistory: a finished run sweeps history past retention and
// counts what it deleted.
func TestRunPrunesHistory(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	pol, _ := alerts.New(alerts.Settings{})
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	r, _ := patrol.New(patrol.Options{Store: e.store, Metrics: patrol.NewMetrics(reg), Now: func() time.Time { return now },
		Settings: func() patrol.Settings {
			return patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy(), Retention: findings.DefaultRetention(),
				Source: snapshot.SourceFunc(func(ctx context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
					return &snapshot.Snapshot{Version: 1, Resources: []snapshot.Resource{node(10)}}, nil, nil
				})}
		}})
	long := now.Add(-40 * 24 * time.Hour).Format(time.RFC3339Nano)
	if _, err := storetest.RawDB(t, e.store.Path()).Exec("INSERT INTO runs (id, trigger, status, analysis, started_at, finished_at) VALUES ('ancient', 'scheduled', 'healthy', 'deterministic', ?, ?)", long, long); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list, _ := e.store.Runs(context.Background(), 10)
	if len(list) != 1 || list[0].ID != rep.RunID {
		t.Fatalf("runs after the sweep: %+v", list)
	}
	if n := gatheredLabel(t, reg, "patrold_store_pruned_rows_total", "table", "runs"); n != 1 {
		t.Fatalf("pruned runs counted: %v", n)
	}
}

// TestLongCollectionLogsProgress: a slow collection is reported while it
// runs, then every stage of the run logs a line.
func TestLongCollectionLogsProgress(t *testing.T) {
	e := newEnv(t)
	logs := &testkit.LogBuffer{}
	pol, _ := alerts.New(alerts.Settings{})
	release := make(chan struct{})
	r, _ := patrol.New(patrol.Options{Store: e.store, ProgressEvery: 10 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Settings: func() patrol.Settings {
			return patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy(),
				Source: snapshot.SourceFunc(func(ctx context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
					<-release
					return &snapshot.Snapshot{Version: 1, Resources: []snapshot.Resource{node(10)}}, nil, nil
				})}
		}})
	done := make(chan error, 1)
	go func() { _, err := r.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{}); done <- err }()
	testkit.EventuallyState(t, 5*time.Second, "two progress lines while collecting", func() (bool, string) {
		return strings.Count(logs.String(), "collection still running") >= 2, logs.String()
	})
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, want := range []string{`msg="snapshot collected"`, "resources=1", `msg="signals detected"`, `msg="committing run"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
}

// TestMissRateByModel: each model-analysed run counts its signals and the
// missed ones under the model it names, and its report names the model; a
// deterministic run counts under none.
func TestMissRateByModel(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	m := patrol.NewMetrics(reg)
	pol, _ := alerts.New(alerts.Settings{})
	src := snapshot.SourceFunc(func(context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
		return &snapshot.Snapshot{Version: 1, Resources: []snapshot.Resource{node(99)}}, nil, nil
	})
	var set patrol.Settings
	r, _ := patrol.New(patrol.Options{Store: e.store, Metrics: m, Settings: func() patrol.Settings { return set }})
	runs := []patrol.Settings{
		{Analyst: silentAnalyst{}, Model: patrol.ModelRef{Provider: "openai", Model: "qwen2.5:14b"}},
		{Analyst: silentAnalyst{}, Model: patrol.ModelRef{Provider: "openai", Model: "qwen2.5:14b"}},
		{Analyst: silentAnalyst{}, Model: patrol.ModelRef{Provider: "anthropic", Model: "claude-x"}},
		{},
	}
	var models []*patrol.ModelRef
	for _, s := range runs {
		s.Policy, s.Publish, s.Source = pol, findings.DefaultPublishPolicy(), src
		set = s
		rep, err := r.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		models = append(models, rep.Model)
	}
	want := []*patrol.ModelRef{{Provider: "openai", Model: "qwen2.5:14b"}, {Provider: "openai", Model: "qwen2.5:14b"}, {Provider: "anthropic", Model: "claude-x"}, nil}
	if !reflect.DeepEqual(models, want) {
		t.Fatalf("report models %v, want %v", models, want)
	}
	exp := `
# HELP patrold_model_missed_signals_by_model_total Signals of model-analysed runs that no model finding matched, by provider and model.
# TYPE patrold_model_missed_signals_by_model_total counter
patrold_model_missed_signals_by_model_total{model="claude-x",provider="anthropic"} 1
patrold_model_missed_signals_by_model_total{model="qwen2.5:14b",provider="openai"} 2
# HELP patrold_model_signals_by_model_total Deterministic signals of runs analysed by the model, by provider and model.
# TYPE patrold_model_signals_by_model_total counter
patrold_model_signals_by_model_total{model="claude-x",provider="anthropic"} 1
patrold_model_signals_by_model_total{model="qwen2.5:14b",provider="openai"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(exp), "patrold_model_signals_by_model_total", "patrold_model_missed_signals_by_model_total"); err != nil {
		t.Fatal(err)
	}
}
