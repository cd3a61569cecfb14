package patrol_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot"
)

// TestRunTimeoutNamesTheKey: a run that outlives schedule.run_timeout
// fails with an error, and a report, that name the key and its value.
// The deadline leaves time for the run to start on a loaded machine.
func TestRunTimeoutNamesTheKey(t *testing.T) {
	e := newEnv(t)
	pol, _ := alerts.New(alerts.Settings{})
	r, _ := patrol.New(patrol.Options{Store: e.store, Settings: func() patrol.Settings {
		return patrol.Settings{Policy: pol, Timeout: 2 * time.Second, Source: snapshot.SourceFunc(func(ctx context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})}
	}})
	rep, err := r.Run(context.Background(), patrol.TriggerScheduled, patrol.RunOptions{})
	const want = "run_timeout (2s) exceeded: collect: context deadline exceeded"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	if rep.Status != patrol.StatusError || !slices.Equal(rep.Errors, []string{want}) {
		t.Fatalf("report: %s %q", rep.Status, rep.Errors)
	}
}

// TestRunCancelledIsNotTimeout: a run cancelled from outside does not
// blame run_timeout.
func TestRunCancelledIsNotTimeout(t *testing.T) {
	e := newEnv(t)
	pol, _ := alerts.New(alerts.Settings{})
	ctx, cancel := context.WithCancel(context.Background())
	r, _ := patrol.New(patrol.Options{Store: e.store, Settings: func() patrol.Settings {
		return patrol.Settings{Policy: pol, Timeout: time.Hour, Source: snapshot.SourceFunc(func(sctx context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
			cancel()
			<-sctx.Done()
			return nil, nil, sctx.Err()
		})}
	}})
	_, err := r.Run(ctx, patrol.TriggerScheduled, patrol.RunOptions{})
	if err == nil || err.Error() != "collect: context canceled" {
		t.Fatalf("error %v, want collect: context canceled", err)
	}
}
