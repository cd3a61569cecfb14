package patrol_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
	"weak"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/file"
	"github.com/patrold/patrold/store"
)

// commitWatch is a store that notes, when a run commits, whether the
// run's snapshot is still reachable and how many collections ran since
// the run read its active findings.
type commitWatch struct {
	*store.Store
	snap     func() bool // the snapshot is still reachable
	gcAtLoad uint32
	seen     []commitSeen
}

type commitSeen struct {
	SnapshotLive bool
	Collected    bool // a collection ran between the active findings' read and the commit
}

func numGC() uint32 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.NumGC
}

func (w *commitWatch) ActiveKeys(ctx context.Context) ([]findings.Finding, error) {
	w.gcAtLoad = numGC()
	return w.Store.ActiveKeys(ctx)
}

func (w *commitWatch) CommitRun(ctx context.Context, in findings.RunInput, finish findings.FinishFunc) ([]findings.Change, error) {
	s := commitSeen{Collected: numGC() > w.gcAtLoad}
	runtime.GC()
	s.SnapshotLive = w.snap()
	w.seen = append(w.seen, s)
	return w.Store.CommitRun(ctx, in, finish)
}

// keptFile is the file source, noting the snapshot it returns (weakly).
type keptFile struct {
	*file.Source
	last weak.Pointer[snapshot.Snapshot]
}

func (k *keptFile) CollectKept(ctx context.Context, kept func(snapshot.Handed)) (*snapshot.Snapshot, []snapshot.Problem, error) {
	snap, probs, err := k.Source.CollectKept(ctx, kept)
	k.last = weak.Make(snap)
	return snap, probs, err
}

// TestSnapshotIsGarbageAtTheCommit: a run without the model stages
// holds its snapshot no longer than its observations need it. At the
// commit it is unreachable (the commit reads only the facts of the
// resources the run asked about), and with CollectBeforeCommit a
// collection ran after the run read its active findings (the collector
// is off otherwise in this test). Without the option no collection runs
// there. Both runs, the first filing and the steady second, are held.
func TestSnapshotIsGarbageAtTheCommit(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	doc, err := snapshot.Encode(&snapshot.Snapshot{Version: 1, TakenAt: time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC),
		Resources: []snapshot.Resource{node(95), {ID: "vm/1", Kind: snapshot.KindVM, Parent: "node/n1", Status: snapshot.StatusRunning,
			Metrics: snapshot.MetricsOf(map[string]float64{"memory_percent": 97})}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, collect := range []bool{true, false} {
		dir := t.TempDir()
		path := filepath.Join(dir, "fleet.json")
		if err := os.WriteFile(path, doc, 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := store.Open(context.Background(), filepath.Join(dir, "patrold.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		fs, err := file.New(file.Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		src := &keptFile{Source: fs}
		w := &commitWatch{Store: st, snap: func() bool { return src.last.Value() != nil }}
		pol, _ := alerts.New(alerts.Settings{})
		r, err := patrol.New(patrol.Options{Store: w, CollectBeforeCommit: collect, Settings: func() patrol.Settings {
			return patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy(), Source: src}
		}})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if rep, err := r.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{}); err != nil || len(rep.Findings) != 2 {
				t.Fatalf("run: %v, %+v", err, rep)
			}
		}
		want := []commitSeen{{SnapshotLive: false, Collected: collect}, {SnapshotLive: false, Collected: collect}}
		if len(w.seen) != len(want) || w.seen[0] != want[0] || w.seen[1] != want[1] {
			t.Fatalf("collect before commit %v: commits saw %+v, want %+v", collect, w.seen, want)
		}
	}
}
