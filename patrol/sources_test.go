package patrol_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/multi"
	"github.com/patrold/patrold/store"
)

// member is one switchable source of several.
type member struct {
	rs  []snapshot.Resource
	err error
	at  *time.Time
}

func (m *member) Collect(context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
	if m.err != nil {
		return nil, nil, m.err
	}
	return &snapshot.Snapshot{Version: 1, TakenAt: *m.at, Resources: slices.Clone(m.rs)}, nil, nil
}

func hot(id string, kind snapshot.Kind, cpu float64) snapshot.Resource {
	r := snapshot.Resource{ID: id, Kind: kind, Status: "online", Metrics: snapshot.Metrics{{Name: snapshot.MetricCPU, Value: cpu}}}
	if kind.Guest() {
		r.Status = "running"
	}
	return r
}

// activeKeys are the active findings as "key resource" strings, sorted.
func activeKeys(t *testing.T, st *store.Store) []string {
	t.Helper()
	active, err := st.Active(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range active {
		out = append(out, f.Key+" "+f.ResourceID)
	}
	sort.Strings(out)
	return out
}

// Attack: source B of two fails. Its findings stay open (its resources
// are absent only because it could not be read), while source A's
// resolve as they would with A alone: cleared where the condition
// cleared, gone where A no longer reports the resource.
func TestAFailedSourceNeverResolvesWhatItCovers(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "patrold.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	a := &member{at: &now, rs: []snapshot.Resource{hot("node/a1", snapshot.KindNode, 95), hot("vm/a2", snapshot.KindVM, 95)}}
	b := &member{at: &now, rs: []snapshot.Resource{hot("node/b1", snapshot.KindNode, 95), hot("vm/b2", snapshot.KindVM, 95)}}
	src, err := multi.New([]multi.Member{{Name: "a", Source: a}, {Name: "b", Source: b}})
	if err != nil {
		t.Fatal(err)
	}
	pol, _ := alerts.New(alerts.Settings{})
	runner, err := patrol.New(patrol.Options{Store: st, Now: func() time.Time { return now },
		Settings: func() patrol.Settings {
			return patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy(), Source: src}
		}})
	if err != nil {
		t.Fatal(err)
	}
	run := func() *patrol.Report {
		t.Helper()
		now = now.Add(time.Minute)
		rep, err := runner.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := run(); rep.Status != patrol.StatusIssuesFound {
		t.Fatalf("first run: %s %v %v", rep.Status, rep.StatusReasons, rep.Errors)
	}
	all := []string{"high_cpu node/a1", "high_cpu node/b1", "high_cpu vm/a2", "high_cpu vm/b2"}
	if got := activeKeys(t, st); !reflect.DeepEqual(got, all) {
		t.Fatalf("after the first run: %v", got)
	}

	// A: a1 cools down, a2 is gone. B: fails whole.
	a.rs = []snapshot.Resource{hot("node/a1", snapshot.KindNode, 10)}
	b.err = errors.New("GET /status/datastore-usage: HTTP 401")
	rep := run()
	if rep.Status != patrol.StatusDegraded || !reflect.DeepEqual(rep.StatusReasons, []string{patrol.ReasonSourceFailed}) ||
		!reflect.DeepEqual(rep.Errors, []string{"source b: GET /status/datastore-usage: HTTP 401"}) {
		t.Fatalf("B failing: status %s reasons %v errors %v", rep.Status, rep.StatusReasons, rep.Errors)
	}
	want := []string{"high_cpu node/b1", "high_cpu vm/b2", "source_failing patrold/source/b"}
	if got := activeKeys(t, st); !reflect.DeepEqual(got, want) {
		t.Fatalf("B failing: active %v, want %v", got, want)
	}
	runs, err := st.Runs(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Complete {
		t.Fatalf("a run with a failed source is recorded complete: %+v", runs)
	}

	// B is back, cooled down: its findings and its own source finding clear.
	b.err = nil
	b.rs = []snapshot.Resource{hot("node/b1", snapshot.KindNode, 10), hot("vm/b2", snapshot.KindVM, 10)}
	if rep := run(); rep.Status != patrol.StatusHealthy {
		t.Fatalf("B back: %s %v %v", rep.Status, rep.StatusReasons, rep.Errors)
	}
	if got := activeKeys(t, st); len(got) != 0 {
		t.Fatalf("B back: still active %v", got)
	}
}

// A source that never collected since it was built may cover anything:
// while it fails, nothing absent resolves, A's included.
func TestASourceNeverSeenCoversEverythingAbsent(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "patrold.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	a := &member{at: &now, rs: []snapshot.Resource{hot("node/a1", snapshot.KindNode, 95), hot("vm/a2", snapshot.KindVM, 95)}}
	pol, _ := alerts.New(alerts.Settings{})
	src, _ := multi.New([]multi.Member{{Name: "a", Source: a}})
	settings := func() patrol.Settings {
		return patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy(), Source: src}
	}
	runner, err := patrol.New(patrol.Options{Store: st, Now: func() time.Time { return now }, Settings: func() patrol.Settings { return settings() }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	// A reload: a new source of two whose second has never collected.
	b := &member{err: errors.New("refused")}
	src2, _ := multi.New([]multi.Member{{Name: "a", Source: a}, {Name: "b", Source: b}})
	settings = func() patrol.Settings {
		return patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy(), Source: src2}
	}
	a.rs = a.rs[:1]
	now = now.Add(time.Minute)
	if _, err := runner.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"high_cpu node/a1", "high_cpu vm/a2", "source_failing patrold/source/b"}
	if got := activeKeys(t, st); !reflect.DeepEqual(got, want) {
		t.Fatalf("active %v, want %v", got, want)
	}
}

// nodeAnalyst files one model finding on a guest, without a node.
type nodeAnalyst struct{}

func (nodeAnalyst) Analyze(_ context.Context, in patrol.AnalysisInput) (*patrol.Analysis, error) {
	return &patrol.Analysis{Observations: []findings.Observation{{
		Key: "slow_queries", ResourceID: "vm/101", ResourceKind: "vm", Category: findings.CategoryPerformance,
		Severity: findings.SeverityWarning, Source: findings.SourceModel,
		Title: prompt.Safe("slow queries", 80), Description: prompt.Safe("the database answers slowly", 200),
	}}}, nil
}

// A model finding on a resource with a node carries it, as the net's do.
func TestModelFindingsCarryTheNode(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "patrold.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	guest := snapshot.Resource{ID: "vm/101", Kind: snapshot.KindVM, Parent: "node/pve2", Status: "running"}
	pol, _ := alerts.New(alerts.Settings{})
	src := &member{at: &now, rs: []snapshot.Resource{guest}}
	runner, err := patrol.New(patrol.Options{Store: st, Now: func() time.Time { return now },
		Settings: func() patrol.Settings {
			return patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy(), Source: src, Analyst: nodeAnalyst{}}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	active, err := st.Active(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(active) != 1 || active[0].Key != "slow-queries" || active[0].ResourceNode != "pve2" {
		t.Fatalf("active %+v", active)
	}
}
