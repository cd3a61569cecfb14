package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/store"
)

// ReplicaStallAfter is how long a replica may stay behind the state
// stream without applying a change before it is unready.
const ReplicaStallAfter = 30 * time.Second

// storeReasons are the run status reasons that name the store.
var storeReasons = []string{patrol.ReasonCommitFailed, patrol.ReasonHistoryFailed}

// unready lists what makes this instance unready, one condition each:
//   - store_file: the database file was deleted or replaced;
//   - store: the database does not answer;
//   - integrity: the last finished run failed for a store reason, and
//     SQLite's quick_check, run in the background after it, found the
//     file malformed (run_store until the check has finished);
//   - run_store: the last finished run failed for a store reason
//     (commit_failed, history_failed);
//   - replica_gap: changes are missing from the state stream (re-seed);
//   - stream_lost: the state stream is not found: nothing is
//     replicated until it is created again (cluster mode);
//   - replica_diverged: the database holds changes the stream never got
//     (being re-seeded);
//   - replica_apply: the last state change could not be applied (a full
//     disk, a read-only file);
//   - replica_refused: a state change was refused (unsigned, another
//     key, a format this build cannot read) and none numbered applied
//     since: a peer of another build writes (cluster mode);
//   - replica_stall: behind the stream with nothing applied for
//     ReplicaStallAfter (cluster mode);
//   - clock_skew: this instance's clock is too far off the NATS
//     server's to lead (bus.ClockSkewBound);
//   - no_writer: no instance held the leader lease within a TTL, as
//     far as this one can tell (cluster mode);
//   - replica_empty: the database applied nothing from the state stream
//     yet (cluster mode: every writer's epoch marker is on it).
func (d *Daemon) unready(ctx context.Context) []api.ReadyProblem {
	var out []api.ReadyProblem
	add := func(cond, format string, args ...any) {
		out = append(out, api.ReadyProblem{Condition: cond, Detail: fmt.Sprintf(format, args...)})
	}
	if err := d.store.FileCheck(); err != nil {
		add("store_file", "%v", err)
	}
	if err := d.store.Ping(ctx); err != nil {
		add("store", "%v", err)
	} else if run := d.lastFinishedRun(ctx); run != nil && run.Status == patrol.StatusError && run.Summary != nil {
		if i := slices.IndexFunc(run.Summary.StatusReasons, func(r string) bool { return slices.Contains(storeReasons, r) }); i >= 0 {
			cond := "run_store"
			//mutate:ready-integrity ./daemon ^TestReadinessFollowsTheStore$
			if d.corruptAfter(run.ID) {
				cond = "integrity"
			}
			add(cond, "the last run %s failed: %s", run.ID, run.Summary.StatusReasons[i])
		}
	}
	if d.cluster != nil {
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		l := d.cluster.Lag(lctx)
		cancel()
		if l != nil && l.Gap != "" {
			add("replica_gap", "%s", l.Gap)
		}
		if l != nil && l.ApplyError != "" {
			add("replica_apply", "cannot apply the state stream: %s", l.ApplyError)
		}
		if l != nil && l.Refused != "" {
			add("replica_refused", "%s", l.Refused)
		}
		//mutate:ready-stream-lost ./daemon ^TestReadyNeedsTheStream$
		if err := d.cluster.StreamGone(); err != nil {
			add("stream_lost", "%v", err)
		}
		if err := d.cluster.Diverged(); err != nil {
			add("replica_diverged", "%v", err)
		}
		//mutate:ready-needs-writer ./daemon ^TestReadyNeedsAWriter
		if err := d.cluster.NoWriter(); err != nil {
			add("no_writer", "%v", err)
		}
		//mutate:ready-clock-skew ./daemon ^TestSkewedInstanceIsUnready$
		if err := d.cluster.ClockSkew(); err != nil {
			add("clock_skew", "%v", err)
		}
		if l != nil && l.AppliedSeq == 0 {
			add("replica_empty", "nothing applied from the state stream yet (last sequence %d)", l.LastSeq)
		}
		if l != nil && l.StreamError == "" && l.Behind && l.AppliedAt != nil {
			if idle := d.opts.Now().Sub(*l.AppliedAt); idle > ReplicaStallAfter {
				add("replica_stall", "applied sequence %d of %d, nothing applied for %s", l.AppliedSeq, l.LastSeq, idle.Round(time.Second))
			}
		}
	}
	return out
}

// integrityMemo is the quick_check verdict on the database after one
// failed run. The check reads the whole file, so it runs once a run,
// in the background (checkIntegrity), never in a probe's path:
//   - run is the failed run the verdict is about ("" before any);
//   - asked is the run a check was last asked for.
type integrityMemo struct {
	mu      sync.Mutex
	run     string
	asked   string
	corrupt bool
	ask     chan string // run ids, to checkIntegrity
}

// corruptAfter says whether the database is malformed, as checked after
// the failed run id. Until that check has finished it says no, and asks
// for it (once a run).
func (d *Daemon) corruptAfter(id string) bool {
	m := &d.integrity
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.run == id {
		return m.corrupt
	}
	if m.asked != id {
		select {
		case m.ask <- id:
			m.asked = id
		default: // a check is queued; the next probe asks again
		}
	}
	return false
}

// checkIntegrity runs the checks corruptAfter asks for until ctx ends.
// A check that could not finish is not a verdict: the next probe asks
// again.
func (d *Daemon) checkIntegrity(ctx context.Context) {
	m := &d.integrity
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-m.ask:
			err := d.store.Check(ctx, false)
			m.mu.Lock()
			if err == nil || store.IsCorrupt(err) {
				m.run, m.corrupt = id, err != nil
			} else {
				m.asked = ""
			}
			m.mu.Unlock()
		}
	}
}

// lastFinishedRun is the newest run that has finished (nil: none).
func (d *Daemon) lastFinishedRun(ctx context.Context) *findings.RunRecord {
	runs, err := d.store.Runs(ctx, 2)
	if err != nil {
		return nil
	}
	for i := range runs {
		if runs[i].FinishedAt != nil {
			return &runs[i]
		}
	}
	return nil
}

// readyError joins the problems into the error /readyz answers with.
func readyError(problems []api.ReadyProblem) error {
	if len(problems) == 0 {
		return nil
	}
	errs := make([]string, len(problems))
	for i, p := range problems {
		errs[i] = p.Condition + ": " + p.Detail
	}
	return errors.New(strings.Join(errs, "; "))
}
