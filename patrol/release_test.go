package patrol_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/store"
)

// releaseSeen is what Release found when it was called.
type releaseSeen struct {
	Calls        int
	AfterCommits int    // AfterCommit calls before it
	Holder       string // the run holding the lock
	Status       string // the stored run record's
	Finished     bool
}

// TestReleaseAfterTheRunIsHandedOn: Release is called once per run, a run
// that failed too, after AfterCommit and with the run's record written,
// while the run still holds the lock (no next run allocates meanwhile).
func TestReleaseAfterTheRunIsHandedOn(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "patrold.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pol, _ := alerts.New(alerts.Settings{})
	fail := false
	src := snapshot.SourceFunc(func(context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
		if fail {
			return nil, nil, errors.New("source down")
		}
		return &snapshot.Snapshot{Version: 1, Resources: []snapshot.Resource{node(95)}}, nil, nil
	})
	var r *patrol.Runner
	afterCommits := 0
	var seen []releaseSeen
	r, err = patrol.New(patrol.Options{
		Store: st,
		Settings: func() patrol.Settings {
			return patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy(), Source: src}
		},
		AfterCommit: func(*patrol.Report) { afterCommits++ },
		Release: func() {
			s := releaseSeen{Calls: len(seen) + 1, AfterCommits: afterCommits, Holder: r.Current()}
			if rec, err := st.Run(context.Background(), s.Holder); err == nil {
				s.Status, s.Finished = rec.Status, rec.FinishedAt != nil
			}
			seen = append(seen, s)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ok, err := r.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fail = true
	failed, _ := r.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{})
	if failed == nil {
		t.Fatal("the failed run returned no report")
	}
	want := []releaseSeen{
		{Calls: 1, AfterCommits: 1, Holder: ok.RunID, Status: ok.Status, Finished: true},
		{Calls: 2, AfterCommits: 2, Holder: failed.RunID, Status: patrol.StatusError, Finished: true},
	}
	if len(seen) != len(want) || seen[0] != want[0] || seen[1] != want[1] {
		t.Fatalf("release saw %+v, want %+v", seen, want)
	}
	if r.Current() != "" {
		t.Fatalf("the lock is still held by %q after the run", r.Current())
	}
}
