package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/storetest"
)

// twin applies the same operations to two stores: cached keeps its active
// findings between run commits, read has them dropped before every commit,
// so it reads them from the database as a fresh process does. The cache is
// only an optimisation: every commit must return the same changes and
// leave the same rows in both.
type twin struct{ cached, read *store.Store }

func newTwin(t testing.TB) twin {
	return twin{cached: openStore(t), read: openStore(t)}
}

func (w twin) do(t fataler, fn func(st *store.Store) error) {
	t.Helper()
	for _, st := range []*store.Store{w.cached, w.read} {
		if err := fn(st); err != nil {
			t.Fatal(err)
		}
	}
}

// commitAs is a complete run with a fixed run id, so both stores record
// the same.
func commitAs(st *store.Store, runID string, at time.Time, obs ...findings.Observation) ([]findings.Change, error) {
	return commitRun(st, runID, at, true, obs...)
}

// commit runs one commit on both and compares the changes and every row,
// and that the cache holds what the database holds.
func (w twin) commit(t fataler, runID string, at time.Time, obs ...findings.Observation) []findings.Change {
	t.Helper()
	got, err := commitAs(w.cached, runID, at, obs...)
	if err != nil {
		t.Fatal(err)
	}
	w.read.DropActiveCache()
	want, err := commitAs(w.read, runID, at, obs...)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal(fmt.Sprintf("run %s: the changes from cached findings differ from those read:\ncached %s\nread   %s", runID, js(got), js(want)))
	}
	all := func(st *store.Store) []findings.Finding {
		fs, err := st.List(context.Background(), findings.ListFilter{Status: "all"})
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	if a, b := all(w.cached), all(w.read); !reflect.DeepEqual(a, b) {
		t.Fatal(fmt.Sprintf("run %s: stored findings differ:\ncached %s\nread   %s", runID, js(a), js(b)))
	}
	cached, ok := w.cached.CachedActive()
	if !ok {
		t.Fatal("run " + runID + ": nothing cached after a commit")
	}
	active, err := w.cached.Active(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]findings.Finding{}
	for _, f := range active {
		byID[f.ID] = f
	}
	if !reflect.DeepEqual(cached, byID) {
		t.Fatal(fmt.Sprintf("run %s: the cache is not the database:\ncache %s\nrows  %s", runID, js(cached), js(byID)))
	}
	// The identity facts detection reads, kept between runs, are the rows'.
	keys, err := w.cached.ActiveKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	gotKeys := map[string]findings.Finding{}
	for _, k := range keys {
		gotKeys[k.ID] = k
	}
	wantKeys := map[string]findings.Finding{}
	for _, f := range active {
		wantKeys[f.ID] = findings.Finding{ID: f.ID, Key: f.Key, ResourceID: f.ResourceID, Category: f.Category, Status: f.Status, DetectedAt: f.DetectedAt}
	}
	if len(keys) != len(gotKeys) || !reflect.DeepEqual(gotKeys, wantKeys) {
		t.Fatal(fmt.Sprintf("run %s: ActiveKeys is not the rows':\nkeys %s\nrows %s", runID, js(keys), js(wantKeys)))
	}
	return got
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestActiveCacheSeesEveryOtherWrite is the attack on the cache: between
// two runs something else changes a finding the next run rewrites (its
// severity moves, so the whole row is written from what the run started
// from). A cache that missed the change would write the old row back over
// it: an operator's acknowledgement, an investigation or a replicated
// change lost. Each case fails when the findings version trigger, the
// touch's own version move or the version check is removed.
func TestActiveCacheSeesEveryOtherWrite(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	a := fobs("node/a", "high_cpu", findings.SeverityWarning, "cpu high")
	b := fobs("node/b", "high_cpu", findings.SeverityWarning, "cpu high")
	c := fobs("node/c", "high_cpu", findings.SeverityWarning, "cpu high")
	worse := func(o findings.Observation) findings.Observation {
		o.Severity = findings.SeverityCritical
		return o
	}
	// Each case writes between the runs; a case that returns observations
	// has run 2 observe those instead of all three, worse.
	cases := map[string]func(t *testing.T, w twin, ids []string) []findings.Observation{
		"operator acknowledges": func(t *testing.T, w twin, ids []string) []findings.Observation {
			w.do(t, func(st *store.Store) error {
				_, err := st.Act(ctx, ids[0], findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "ops"}, t0.Add(time.Minute))
				return err
			})
			return nil
		},
		"operator snoozes": func(t *testing.T, w twin, ids []string) []findings.Observation {
			w.do(t, func(st *store.Store) error {
				_, err := st.Act(ctx, ids[0], findings.ActionRequest{Action: findings.ActionSnooze, For: time.Hour, Actor: "ops"}, t0.Add(time.Minute))
				return err
			})
			return nil
		},
		"an investigation starts": func(t *testing.T, w twin, ids []string) []findings.Observation {
			draft := func(f *findings.Finding, attempt int, epoch uint64) findings.OutboxDraft {
				return findings.OutboxDraft{Subject: "remediation.requests", Type: "patrold.remediation.request", ResourceID: f.ResourceID,
					Data: map[string]any{"finding_id": f.ID, "attempt": attempt}}
			}
			w.do(t, func(st *store.Store) error {
				got, err := st.RequestInvestigations(ctx, ids, findings.DefaultGate(), findings.AutonomyFull, t0.Add(time.Minute), draft)
				if err == nil && len(got) == 0 {
					err = fmt.Errorf("no investigation started")
				}
				return err
			})
			return nil
		},
		"another process edits the row": func(t *testing.T, w twin, ids []string) []findings.Observation {
			w.do(t, func(st *store.Store) error {
				db, err := sql.Open("sqlite3", "file:"+st.Path()+"?_busy_timeout=5000")
				if err != nil {
					return err
				}
				defer db.Close()
				_, err = db.Exec("UPDATE findings SET fix_summary = 'patched by hand' WHERE id = ?", ids[0])
				return err
			})
			return nil
		},
		"a replicated touch": func(t *testing.T, w twin, ids []string) []findings.Observation {
			// A leader's run re-detecting both findings unchanged: one
			// touch change, no row image.
			replicate(t, w, []string{contracts.OpEpoch, contracts.OpTouch}, func(leader *store.Store) {
				if _, err := commitAs(leader, "run-l", t0.Add(time.Minute), a, b); err != nil {
					t.Fatal(err)
				}
			})
			return nil
		},
		"a replicated new finding": func(t *testing.T, w twin, ids []string) []findings.Observation {
			// The leader files c; run 2 here observes it too. A cache that
			// missed the insert would file c as new over the stored row.
			replicate(t, w, []string{contracts.OpEpoch, "upsert"}, func(leader *store.Store) {
				// An incomplete run that saw only c: nothing else moves.
				_, err := leader.CommitRun(ctx, findings.RunInput{RunID: "run-l", Now: t0.Add(time.Minute), Observations: []findings.Observation{c},
					Policy: findings.DefaultPublishPolicy()}, func([]findings.Change) (findings.RunRecord, []findings.OutboxDraft, error) {
					return findings.RunRecord{ID: "run-l", Trigger: "manual", Status: "degraded", Analysis: "deterministic", StartedAt: t0}, nil, nil
				})
				if err != nil {
					t.Fatal(err)
				}
			})
			// Run 2 does not observe c: a store that knows c resolves it.
			return []findings.Observation{worse(a), worse(b)}
		},
		"a replicated row": func(t *testing.T, w twin, ids []string) []findings.Observation {
			replicate(t, w, []string{contracts.OpEpoch, "upsert"}, func(leader *store.Store) {
				if _, err := leader.Act(ctx, ids[0], findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "ops"}, t0.Add(time.Minute)); err != nil {
					t.Fatal(err)
				}
			})
			return nil
		},
	}
	for name, between := range cases {
		t.Run(name, func(t *testing.T) {
			w := newTwin(t)
			ch := w.commit(t, "run-1", t0, a, b)
			ids := []string{ch[0].Finding.ID, ch[1].Finding.ID}
			if _, ok := w.cached.CachedActive(); !ok {
				t.Fatal("the first commit cached nothing")
			}
			before, err := w.cached.Get(ctx, ids[0])
			if err != nil {
				t.Fatal(err)
			}
			run2 := between(t, w, ids)
			if run2 == nil {
				run2 = []findings.Observation{worse(a), worse(b), worse(c)}
			}
			after, err := w.cached.Get(ctx, ids[0])
			if err != nil {
				t.Fatal(err)
			}
			afterB, err := w.cached.Get(ctx, ids[1])
			if err != nil {
				t.Fatal(err)
			}
			if reflect.DeepEqual(before, after) && name != "a replicated new finding" {
				t.Fatal("the write between the runs changed nothing: the case proves nothing")
			}
			got := w.commit(t, "run-2", t0.Add(2*time.Minute), run2...)
			// The whole rows after the run: what was there, moved only
			// by this run (severity, last seen, times raised).
			for i, prev := range []findings.Finding{after, afterB} {
				f := got[i].Finding
				if f.ID != prev.ID || f.TimesRaised != prev.TimesRaised+1 || f.AcknowledgedAt == nil != (prev.AcknowledgedAt == nil) ||
					f.SnoozedUntil == nil != (prev.SnoozedUntil == nil) || f.InvestigationStatus != prev.InvestigationStatus ||
					f.FixSummary != prev.FixSummary || f.Attempts != prev.Attempts {
					t.Fatalf("run 2 lost what happened between the runs:\nbefore %s\nafter  %s", js(prev), js(f))
				}
			}
		})
	}
}

// replicate has a leader that holds what both stores of w hold (run-1 of
// a and b) capture what write does. It applies the captured changes to
// both stores, as a follower does. want are the ops of the findings and
// epoch changes it must have captured.
func replicate(t *testing.T, w twin, want []string, write func(leader *store.Store)) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	leader := openStore(t)
	if _, err := commitAs(leader, "run-1", t0, fobs("node/a", "high_cpu", findings.SeverityWarning, "cpu high"),
		fobs("node/b", "high_cpu", findings.SeverityWarning, "cpu high")); err != nil {
		t.Fatal(err)
	}
	if err := leader.EnableCapture(ctx, "state.changes", "leader", 1); err != nil {
		t.Fatal(err)
	}
	write(leader)
	rows, err := leader.PendingEvents(ctx, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	w.do(t, func(st *store.Store) error {
		ops = ops[:0]
		for i, r := range rows {
			if r.Type != contracts.TypeStateChange {
				continue
			}
			c, err := contracts.DecodeStateChange(r.Data)
			if err != nil {
				return err
			}
			if c.Table == "findings" || c.Op == contracts.OpEpoch {
				ops = append(ops, c.Op)
			}
			if _, err := st.ApplyState(ctx, uint64(i+1), "follower", c, t0.Add(time.Minute)); err != nil {
				return err
			}
		}
		return nil
	})
	if !reflect.DeepEqual(ops, want) {
		t.Fatalf("replicated findings changes %v, want %v", ops, want)
	}
}

// TestActiveCacheMatchesTheDatabase: over random sequences of runs
// (findings appearing, changing severity and text, clearing, regressing)
// and operator actions between them. A store that keeps its active
// findings returns exactly the changes, and keeps exactly the rows, of
// one that reads them every time. twin.commit compares both, and the
// cache with the rows.
func TestActiveCacheMatchesTheDatabase(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		dir := t.TempDir()
		open := func(name string) *store.Store {
			st, err := store.Open(context.Background(), filepath.Join(dir, name))
			if err != nil {
				rt.Fatal(err)
			}
			return st
		}
		w := twin{cached: open("cached.db"), read: open("read.db")}
		defer w.cached.Close()
		defer w.read.Close()
		at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		sevs := []findings.Severity{findings.SeverityWatch, findings.SeverityWarning, findings.SeverityCritical}
		actions := []findings.Action{findings.ActionAcknowledge, findings.ActionSnooze, findings.ActionDismiss, findings.ActionSuppress, findings.ActionResolve}
		runs := rapid.IntRange(1, 8).Draw(rt, "runs")
		for run := range runs {
			at = at.Add(time.Duration(rapid.IntRange(1, 120).Draw(rt, "minutes")) * time.Minute)
			var obs []findings.Observation
			for r := range 5 {
				if !rapid.Bool().Draw(rt, fmt.Sprintf("present %d", r)) {
					continue
				}
				sev := rapid.SampledFrom(sevs).Draw(rt, "severity")
				text := rapid.SampledFrom([]string{"high", "very high"}).Draw(rt, "text")
				obs = append(obs, fobs(fmt.Sprintf("node/%d", r), "high_cpu", sev, text))
			}
			ch := w.commit(rt, fmt.Sprintf("run-%d", run), at, obs...)
			for _, c := range ch {
				if !rapid.Bool().Draw(rt, "act") {
					continue
				}
				req := findings.ActionRequest{Action: rapid.SampledFrom(actions).Draw(rt, "action"), For: time.Hour, Reason: findings.DismissWillFixLater, Actor: "ops"}
				var errs [2]error
				for i, st := range []*store.Store{w.cached, w.read} {
					_, errs[i] = st.Act(context.Background(), c.Finding.ID, req, at.Add(time.Second))
				}
				if (errs[0] == nil) != (errs[1] == nil) {
					rt.Fatalf("%s: the action's outcome differs: %v / %v", req.Action, errs[0], errs[1])
				}
			}
		}
	})
}

// TestActiveCacheSeesADeletion: retention deletes a dismissed (still
// active) finding between two runs; the next run that observes it again
// files it new, as a store reading its findings does, instead of writing
// the deleted row back from memory.
func TestActiveCacheSeesADeletion(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	a := fobs("node/a", "high_cpu", findings.SeverityWarning, "cpu high")
	b := fobs("node/b", "high_cpu", findings.SeverityWarning, "cpu high")
	w := newTwin(t)
	ch := w.commit(t, "run-1", t0, a, b)
	w.do(t, func(st *store.Store) error {
		_, err := st.Act(ctx, ch[0].Finding.ID, findings.ActionRequest{Action: findings.ActionDismiss, Reason: "not_an_issue", Actor: "ops"}, t0)
		return err
	})
	w.commit(t, "run-2", t0.Add(time.Minute), a, b) // a stays active, dismissed
	later := t0.Add(findings.DismissedRetention + time.Hour)
	w.do(t, func(st *store.Store) error {
		res, err := st.Sweep(ctx, later, time.Hour, findings.DefaultPublishPolicy())
		if err == nil && res.Deleted != 1 {
			err = fmt.Errorf("sweep deleted %d findings, want the dismissed one", res.Deleted)
		}
		return err
	})
	got := w.commit(t, "run-3", later.Add(time.Minute), a, b)
	if got[0].Kind != findings.ChangeNew || got[0].Finding.ID != ch[0].Finding.ID {
		t.Fatalf("the deleted finding observed again: %s %s, want new", got[0].Kind, got[0].Finding.ID)
	}
}

// TestTouchBringsADriftedReplicaBack is the failover attack on the touch:
// a writer re-detected its findings and died before the change left its
// outbox, so its own rows are one raise ahead of the stream; it comes
// back as a replica. The next writer's touch sets the times raised it
// decided, so the drifted rows converge (a touch that added one would
// keep them one off for good).
func TestTouchBringsADriftedReplicaBack(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	a := fobs("node/a", "high_cpu", findings.SeverityWarning, "cpu high")
	leader, follower := openStore(t), openStore(t)
	if err := leader.EnableCapture(ctx, "state.changes", "leader", 1); err != nil {
		t.Fatal(err)
	}
	seq := uint64(0)
	apply := func() {
		rows, err := leader.PendingEvents(ctx, 10000)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Type != contracts.TypeStateChange {
				continue
			}
			c, err := contracts.DecodeStateChange(r.Data)
			if err != nil {
				t.Fatal(err)
			}
			seq++
			if _, err := follower.ApplyState(ctx, seq, "follower", c, t0); err != nil {
				t.Fatal(err)
			}
		}
		storetest.MarkAllSent(t, leader, 1000)
	}
	ch, err := commitAs(leader, "run-1", t0, a)
	if err != nil {
		t.Fatal(err)
	}
	apply()
	// The follower's row drifts: a re-detection of its own that never
	// reached the stream.
	if _, err := follower.DB().Exec("UPDATE finding_seen SET times_raised = times_raised + 1 WHERE id = ?", ch[0].Finding.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := commitAs(leader, "run-2", t0.Add(time.Minute), a); err != nil {
		t.Fatal(err)
	}
	apply()
	want, err := leader.Get(ctx, ch[0].Finding.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := follower.Get(ctx, ch[0].Finding.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want.TimesRaised != 2 || !reflect.DeepEqual(got, want) {
		t.Fatalf("after the next touch the replica's finding is\n%s\nthe writer's\n%s", js(got), js(want))
	}
}

// TestActiveKeysSeeAnotherProcessesSwap: another process on the same
// database swaps one active finding for another (the count stays), then
// this process commits a run that changes no membership. The identity
// facts it keeps must be read again: they are the database's, not the
// ones it built before the swap.
func TestActiveKeysSeeAnotherProcessesSwap(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "f.db")
	a, b := openAt(t, path), openAt(t, path)
	x := fobs("vm/1", "high_cpu", findings.SeverityWarning, "cpu high")
	y := fobs("vm/1", "high_memory", findings.SeverityWarning, "memory high")
	z := fobs("vm/2", "high_cpu", findings.SeverityWarning, "cpu high")
	keys := func(st *store.Store) []string {
		t.Helper()
		list, err := st.ActiveKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range list {
			out = append(out, f.Key+" "+f.ResourceID)
		}
		slices.Sort(out)
		return out
	}
	commit(t, a, t0, true, x, z)
	if got, want := keys(a), []string{"high_cpu vm/1", "high_cpu vm/2"}; !slices.Equal(got, want) {
		t.Fatalf("active keys %q, want %q", got, want)
	}
	commit(t, b, t0.Add(time.Minute), true, y, z) // x resolves (vm/1 was seen), y opens
	commit(t, a, t0.Add(2*time.Minute), true, y, z)
	want := []string{"high_cpu vm/2", "high_memory vm/1"}
	if got := keys(b); !slices.Equal(got, want) {
		t.Fatalf("the other process's active keys %q, want %q", got, want)
	}
	if got := keys(a); !slices.Equal(got, want) {
		t.Errorf("active keys after the other process's swap %q, want the database's %q", got, want)
	}
	// And the order unobserved findings resolve in is the database's too:
	// the other process swaps again, and this process's next run, which
	// sees vm/1 without y, resolves y.
	disk := fobs("vm/1", "high_disk", findings.SeverityWarning, "disk high")
	commit(t, b, t0.Add(3*time.Minute), true, x, y, z)
	ch := commit(t, a, t0.Add(4*time.Minute), true, disk, z)
	var resolved []string
	for _, c := range ch {
		if c.Kind == findings.ChangeResolved {
			resolved = append(resolved, c.Finding.Key+" "+c.Finding.ResourceID)
		}
	}
	slices.Sort(resolved)
	if want := []string{"high_cpu vm/1", "high_memory vm/1"}; !slices.Equal(resolved, want) {
		t.Errorf("resolved %q, want %q", resolved, want)
	}
}
