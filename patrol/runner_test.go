package patrol_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/store"
)

type env struct {
	t      *testing.T
	store  *store.Store
	runner *patrol.Runner
	src    *snapshot.Snapshot
	doc    []byte // the document to decode, when set (instead of src)
	srcErr error
	now    time.Time
	prober patrol.Prober
	during func() // called as a collection starts
	// problems are added to what decoding finds (a source's warnings).
	problems []snapshot.Problem
}

// envSource is env's source: it decodes e.doc, or e.src encoded.
type envSource struct{ e *env }

func (s envSource) Collect(ctx context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
	e := s.e
	if e.during != nil {
		e.during()
	}
	if e.srcErr != nil {
		return nil, nil, e.srcErr
	}
	data := e.doc
	if data == nil {
		data, _ = snapshot.Encode(e.src)
	}
	snap, problems, err := snapshot.Decode(data, snapshot.DecodeOptions{})
	return snap, append(problems, e.problems...), err
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "patrold.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pol, err := alerts.New(alerts.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, store: st, now: time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)}
	e.runner, err = patrol.New(patrol.Options{
		Store: st, Now: func() time.Time { return e.now },
		Settings: func() patrol.Settings {
			return patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy(), Source: envSource{e}, Prober: e.prober}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) run() *patrol.Report {
	e.t.Helper()
	e.now = e.now.Add(10 * time.Minute)
	rep, err := e.runner.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{})
	if err != nil && rep == nil {
		e.t.Fatal(err)
	}
	return rep
}

func loadExample(t *testing.T, name string) *snapshot.Snapshot {
	data, err := os.ReadFile(filepath.Join("..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := snapshot.Decode(data, snapshot.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func changes(rep *patrol.Report) map[findings.ChangeKind]int {
	out := map[findings.ChangeKind]int{}
	for _, f := range rep.Findings {
		out[f.Change]++
	}
	return out
}

func TestSameSnapshotTwiceIsIdempotent(t *testing.T) {
	e := newEnv(t)
	e.src = loadExample(t, "small-faults.json")
	first := e.run()
	if first.Status != patrol.StatusCritical || changes(first)[findings.ChangeNew] != 9 || len(first.Signals) != 9 {
		t.Fatalf("first run: %s %v", first.Status, changes(first))
	}
	second := e.run()
	if changes(second)[findings.ChangeUnchanged] != 9 || len(second.Findings) != 9 {
		t.Fatalf("second run: %v", changes(second))
	}
	for i := range first.Findings {
		if first.Findings[i].ID != second.Findings[i].ID {
			t.Errorf("finding %d: id changed %s -> %s", i, first.Findings[i].ID, second.Findings[i].ID)
		}
	}
	n, _ := e.store.Count(context.Background())
	if n != 9 {
		t.Fatalf("stored %d findings, want 9", n)
	}
	f, _ := e.store.Get(context.Background(), first.Findings[0].ID)
	if f.TimesRaised != 2 {
		t.Errorf("times_raised %d", f.TimesRaised)
	}
}

func TestClearedFaultResolvesAndRegressionReopens(t *testing.T) {
	e := newEnv(t)
	e.src = loadExample(t, "small-faults.json")
	e.run()
	e.src = loadExample(t, "small-healthy.json")
	rep := e.run()
	if rep.Status != patrol.StatusHealthy || len(rep.Resolved) != 9 {
		t.Fatalf("healthy run: status %s resolved %d %v", rep.Status, len(rep.Resolved), rep.StatusReasons)
	}
	f, _ := e.store.Get(context.Background(), rep.Resolved[0])
	if f.Status != findings.StatusResolved || f.ResolveReason != findings.ResolveConditionCleared {
		t.Fatalf("resolved finding: %+v", f)
	}
	e.src = loadExample(t, "small-faults.json")
	rep = e.run()
	if changes(rep)[findings.ChangeReopened] != 9 {
		t.Fatalf("regression: %v", changes(rep))
	}
	f, _ = e.store.Get(context.Background(), rep.Findings[0].ID)
	if f.RegressionCount != 1 || f.Status != findings.StatusActive {
		t.Fatalf("reopened: %+v", f)
	}
}

func node(cpu float64) snapshot.Resource {
	return snapshot.Resource{ID: "node/n1", Kind: "node", Status: "online", Metrics: snapshot.MetricsOf(map[string]float64{"cpu_percent": cpu})}
}

func TestHysteresisAcrossRuns(t *testing.T) {
	e := newEnv(t)
	snap := func(rs ...snapshot.Resource) *snapshot.Snapshot {
		return &snapshot.Snapshot{Version: 1, TakenAt: e.now, Resources: rs}
	}
	e.src = snap(node(75))
	if rep := e.run(); changes(rep)[findings.ChangeNew] != 1 {
		t.Fatalf("75: %v", changes(rep))
	}
	e.src = snap(node(68)) // below trigger, above clear: held open
	if rep := e.run(); changes(rep)[findings.ChangeUnchanged] != 1 || len(rep.Resolved) != 0 {
		t.Fatalf("68: %v", changes(rep))
	}
	e.src = snap(node(64))
	if rep := e.run(); len(rep.Resolved) != 1 {
		t.Fatalf("64: %v", changes(rep))
	}
	e.src = snap(node(68)) // below trigger, not active: stays closed
	if rep := e.run(); len(rep.Findings) != 0 {
		t.Fatalf("68 after close: %v", changes(rep))
	}
}

func TestIncompleteDataNeverResolves(t *testing.T) {
	e := newEnv(t)
	e.src = &snapshot.Snapshot{Version: 1, TakenAt: e.now, Resources: []snapshot.Resource{
		node(90), {ID: "storage/s", Kind: "storage", Status: "online", Metrics: snapshot.MetricsOf(map[string]float64{"usage_percent": 90})},
	}}
	if rep := e.run(); len(rep.Findings) != 2 {
		t.Fatalf("setup: %v", rep.Findings)
	}
	// Metric missing on the node and the storage pool dropped as invalid
	// (usage 130): neither finding may resolve.
	e.src = &snapshot.Snapshot{Version: 1, TakenAt: e.now, Resources: []snapshot.Resource{
		{ID: "node/n1", Kind: "node", Status: "online", Metrics: snapshot.MetricsOf(map[string]float64{"memory_percent": 10})},
		{ID: "storage/s", Kind: "storage", Status: "online", Metrics: snapshot.MetricsOf(map[string]float64{"usage_percent": 130})},
	}}
	rep := e.run()
	if rep.Status != patrol.StatusDegraded || len(rep.InvalidResources) != 1 || len(rep.Resolved) != 0 {
		t.Fatalf("degraded run: status %s invalid %v resolved %v", rep.Status, rep.InvalidResources, rep.Resolved)
	}
	// The source fails: an error run touches nothing.
	e.srcErr = errors.New("collector exploded")
	rep = e.run()
	if rep.Status != patrol.StatusError || len(rep.Resolved) != 0 || len(rep.Errors) != 1 {
		t.Fatalf("error run: %+v", rep)
	}
	// patrold files a finding about itself, and only that.
	if len(rep.Findings) != 1 || rep.Findings[0].ResourceID != patrol.SourceResourceID || rep.Findings[0].Change != findings.ChangeNew ||
		rep.Findings[0].Severity != findings.SeverityCritical {
		t.Fatalf("self finding: %+v", rep.Findings)
	}
	if ok, why := findings.DefaultGate().ShouldInvestigate(&findings.Finding{ResourceID: patrol.SourceResourceID, Status: findings.StatusActive,
		Severity: findings.SeverityCritical}, findings.AutonomyFull, e.now); ok || why != findings.RefuseSynthetic {
		t.Fatalf("self finding passes the gate: %s", why)
	}
	e.srcErr = nil
	// Offline node: metrics stale, finding kept. Storage absent in a
	// complete run: resource gone, resolved.
	e.src = &snapshot.Snapshot{Version: 1, TakenAt: e.now, Resources: []snapshot.Resource{
		{ID: "node/n1", Kind: "node", Status: "offline", Metrics: snapshot.MetricsOf(map[string]float64{"cpu_percent": 1})},
	}}
	rep = e.run()
	if len(rep.Resolved) != 2 {
		t.Fatalf("complete run: resolved %v", rep.Resolved)
	}
	for _, id := range rep.Resolved {
		f, _ := e.store.Get(context.Background(), id)
		switch f.ResourceID {
		case "storage/s":
			if f.ResolveReason != findings.ResolveResourceGone {
				t.Fatalf("storage resolved as %s", f.ResolveReason)
			}
		case patrol.SourceResourceID:
			if f.ResolveReason != findings.ResolveConditionCleared {
				t.Fatalf("self finding resolved as %s", f.ResolveReason)
			}
		default:
			t.Fatalf("resolved the wrong finding: %+v", f)
		}
	}
	// The offline node keeps its high_cpu finding and opens node_offline.
	active, _ := e.store.Active(context.Background())
	keys := map[string]bool{}
	for _, f := range active {
		if f.ResourceID == "node/n1" {
			keys[f.Key] = true
		}
	}
	if len(active) != 2 || !keys["high_cpu"] || !keys["node_offline"] {
		t.Fatalf("active: %v", active)
	}
}

func TestEmptyScopeIsNeverHealthy(t *testing.T) {
	e := newEnv(t)
	e.src = &snapshot.Snapshot{Version: 1, TakenAt: e.now}
	rep := e.run()
	if rep.Status != patrol.StatusDegraded || rep.StatusReasons[0] != patrol.ReasonEmptyScope {
		t.Fatalf("empty scope: %s %v", rep.Status, rep.StatusReasons)
	}
}

func TestOutboxRows(t *testing.T) {
	e := newEnv(t)
	e.src = loadExample(t, "small-faults.json")
	e.run()
	e.run()
	ev, err := e.store.PendingEvents(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	opened, completed := 0, 0
	for _, x := range ev {
		switch x.Type {
		case "patrold.finding.opened":
			opened++
		case contracts.TypeRunCompleted:
			completed++
		default:
			t.Errorf("unexpected event %s", x.Type)
		}
	}
	if opened != 9 || completed != 2 {
		t.Fatalf("opened %d completed %d", opened, completed)
	}
}

func TestOneRunAtATime(t *testing.T) {
	e := newEnv(t)
	block := make(chan struct{})
	entered := make(chan struct{})
	st := e.store
	pol, _ := alerts.New(alerts.Settings{})
	r, _ := patrol.New(patrol.Options{Store: st, Settings: func() patrol.Settings {
		return patrol.Settings{Policy: pol, Source: snapshot.SourceFunc(func(ctx context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
			close(entered)
			<-block
			return &snapshot.Snapshot{Version: 1, Resources: []snapshot.Resource{node(10)}}, nil, nil
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
	_, err := r.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{})
	var busy *patrol.BusyError
	if !errors.As(err, &busy) || busy.CurrentRunID != r.Current() || busy.CurrentRunID == "" {
		t.Fatalf("second run: %v", err)
	}
	close(block)
	wg.Wait()
	if first.Status != patrol.StatusHealthy || r.Current() != "" {
		t.Fatalf("first run %s, lock %q", first.Status, r.Current())
	}
}

// TestRunQueuesBehindAFinishedRun: once a run's record says finished, a
// new run is not refused while the first one releases its memory; it
// waits for the lock and runs (docs/API.md, POST /api/v1/runs).
func TestRunQueuesBehindAFinishedRun(t *testing.T) {
	e := newEnv(t)
	releasing, unblock := make(chan struct{}), make(chan struct{})
	pol, _ := alerts.New(alerts.Settings{})
	var once sync.Once
	r, _ := patrol.New(patrol.Options{Store: e.store, Release: func() {
		once.Do(func() { close(releasing); <-unblock })
	}, Settings: func() patrol.Settings {
		return patrol.Settings{Policy: pol, Source: snapshot.SourceFunc(func(ctx context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
			return &snapshot.Snapshot{Version: 1, Resources: []snapshot.Resource{node(10)}}, nil, nil
		})}
	}})
	firstDone := make(chan *patrol.Report, 1)
	go func() {
		rep, _ := r.Run(context.Background(), patrol.TriggerScheduled, patrol.RunOptions{})
		firstDone <- rep
	}()
	<-releasing
	first := r.Current()
	stored, err := e.store.Run(context.Background(), first)
	if err != nil || stored.Status != patrol.StatusHealthy || stored.FinishedAt == nil {
		t.Fatalf("the first run's record while it releases: %+v %v", stored, err)
	}
	type result struct {
		rep *patrol.Report
		err error
	}
	second := make(chan result, 1)
	go func() {
		rep, err := r.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{})
		second <- result{rep, err}
	}()
	testkit.Eventually(t, 5*time.Second, "the second run queues", func() bool { return r.Waiting() == 1 })
	close(unblock)
	got := <-second
	if got.err != nil || got.rep.Status != patrol.StatusHealthy || got.rep.RunID == first {
		t.Fatalf("second run: %+v %v", got.rep, got.err)
	}
	if rep := <-firstDone; rep.RunID != first {
		t.Fatalf("first run %s, want %s", rep.RunID, first)
	}
}

func TestRunTimeoutIsError(t *testing.T) {
	e := newEnv(t)
	pol, _ := alerts.New(alerts.Settings{})
	r, _ := patrol.New(patrol.Options{Store: e.store, Settings: func() patrol.Settings {
		return patrol.Settings{Policy: pol, Timeout: 20 * time.Millisecond, Source: snapshot.SourceFunc(func(ctx context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})}
	}})
	rep, err := r.Run(context.Background(), patrol.TriggerScheduled, patrol.RunOptions{})
	if err == nil || rep.Status != patrol.StatusError {
		t.Fatalf("timeout: %v %v", err, rep)
	}
	stored, err := e.store.Run(context.Background(), rep.RunID)
	if err != nil || stored.Status != patrol.StatusError {
		t.Fatalf("stored run: %+v %v", stored, err)
	}
}
