// Package patrol runs the patrol pipeline: admission, collection,
// thresholds, detection, filing, reconciliation, persistence and the run
// record. It never executes infrastructure writes.
package patrol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/probe"
	"github.com/patrold/patrold/store/records"
)

// Store is what the runner needs of the findings store.
type Store interface {
	ActiveKeys(ctx context.Context) ([]findings.Finding, error)
	Active(ctx context.Context) ([]findings.Finding, error)
	StartRun(ctx context.Context, r findings.RunRecord) error
	FailRun(ctx context.Context, r findings.RunRecord, cause error, now time.Time) error
	CommitRun(ctx context.Context, in findings.RunInput, finish findings.FinishFunc) ([]findings.Change, error)
	RequestInvestigations(ctx context.Context, ids []string, gate findings.Gate, autonomy findings.Autonomy, now time.Time, draft findings.RequestDraft) ([]findings.Finding, error)
	RecoverStuck(ctx context.Context, gate findings.Gate, now time.Time) ([]string, error)
	Sweep(ctx context.Context, now time.Time, resolvedRetention time.Duration, policy findings.PublishPolicy) (findings.SweepResult, error)
	Prune(ctx context.Context, now time.Time, r findings.Retention) (records.Pruned, error)
}

// Settings are the config-scoped values a run reads; they are swapped
// atomically on reload and read once at the start of every run.
type Settings struct {
	Policy  *alerts.Policy
	Publish findings.PublishPolicy
	Source  snapshot.Source
	// Analyst runs the model stages; nil is deterministic only.
	Analyst Analyst
	// Model names the model behind Analyst (the run report and the
	// per-model metrics).
	Model ModelRef
	// Prober fills in reachability for running guests the source gave no
	// verdict for; nil skips probing.
	Prober  Prober
	Timeout time.Duration // 0: none
	// Autonomy and Gate decide which findings are handed to remediation.
	Autonomy findings.Autonomy
	Gate     findings.Gate
	// ResolvedRetention is how long resolved findings are kept (0: the
	// 30-day default).
	ResolvedRetention time.Duration
	// Retention of runs, audit events, investigations, sessions, approvals
	// and silences, swept after every run (zero durations keep a table).
	Retention findings.Retention
}

// Prober probes guest reachability in place: it sets Reachable only on
// the resources probe.Candidate names (detection while decoding detects
// exactly those again once a probe ran).
type Prober interface {
	Probe(ctx context.Context, snap *snapshot.Snapshot, now time.Time) probe.Result
}

// Options configure a Runner.
type Options struct {
	Store    Store
	Settings func() Settings
	Logger   *slog.Logger
	Now      func() time.Time
	Metrics  *Metrics // nil: no metrics
	// AfterCommit is called after a run record is durable (hand-over,
	// relay kick). It must not block for long.
	AfterCommit func(rep *Report)
	// History is the stored usage history capacity_forecast reads and
	// collected runs append to; nil: no forecast.
	History UsageHistory
	// ProgressEvery is how often a collection still running is logged
	// (0: DefaultProgressEvery).
	ProgressEvery time.Duration
	// Release, when set, is called after each run, once its report is
	// handed on (AfterCommit) and its snapshot is garbage. It runs before
	// the run lock is released. A daemon gives the run's peak back to the
	// OS there, so it does not stay resident until the next run. A run
	// admitted meanwhile waits for it (acquire).
	Release func()
	// KeepPlainText keeps, from each run to the next, the texts the run
	// found plain (prompt.PlainMemo), so a steady run does not check the
	// same text again. Only a process that runs again (a daemon) gains.
	KeepPlainText bool
}

// DefaultProgressEvery: a long collection says it is still running every
// 15 seconds, so a large fleet's run is never silent until its end.
const DefaultProgressEvery = 15 * time.Second

// ErrBusy is returned when a run is already in progress.
var ErrBusy = errors.New("patrol already running")

// BusyError carries the id of the run holding the lock.
type BusyError struct{ CurrentRunID string }

func (e *BusyError) Error() string { return "patrol already running: " + e.CurrentRunID }

// Is makes errors.Is(err, ErrBusy) true.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// Runner runs patrols, one at a time.
type Runner struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	current string // run id holding the lock, "" when idle
	cancel  context.CancelFunc
	// finishing is set while the current run's record already says it
	// finished and only its tail runs (hand-over, AfterCommit, Release).
	// freed is closed when that run lets the lock go.
	finishing bool
	freed     chan struct{}
	waiting   int // admissions queued behind a finishing run (tests)

	// plain remembers from run to run the texts a run found plain
	// (prompt.PlainMemo): a steady run files the same text again.
	plain *prompt.PlainMemo

	// fits are the forecast's trends the last run fitted, by resource id
	// (only a run reads or writes them, and runs are one at a time).
	fits map[string]fitted
}

// New builds a Runner.
func New(opts Options) (*Runner, error) {
	if opts.Store == nil {
		return nil, errors.New("patrol: Store is required")
	}
	if opts.Settings == nil {
		return nil, errors.New("patrol: Settings is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = DefaultProgressEvery
	}
	r := &Runner{opts: opts, log: opts.Logger.With("component", "patrol")}
	if opts.KeepPlainText {
		r.plain = prompt.NewPlainMemo()
	}
	return r, nil
}

// FinishingWait bounds how long a new run queues behind a run whose
// record already says finished (docs/API.md, POST /api/v1/runs).
const FinishingWait = 10 * time.Second

// acquire takes the run lock for a new run id. A run whose record says
// finished no longer refuses: the new run waits for its tail, at most
// FinishingWait.
func (r *Runner) acquire(ctx context.Context, id string, cancel context.CancelFunc) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current != "" && r.finishing {
		freed := r.freed
		r.waiting++
		r.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
		case <-time.After(FinishingWait):
		}
		r.mu.Lock()
		r.waiting--
	}
	if r.current != "" {
		return &BusyError{CurrentRunID: r.current}
	}
	r.current, r.cancel, r.freed = id, cancel, make(chan struct{})
	return nil
}

// finish marks the run id as finishing: its record is durable.
func (r *Runner) finish(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current == id {
		r.finishing = true
	}
}

// release clears the lock only if id still holds it (compare-and-clear).
func (r *Runner) release(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current == id {
		r.current, r.cancel, r.finishing = "", nil, false
		close(r.freed)
	}
}

// Current returns the id of the run in progress, or "".
func (r *Runner) Current() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current
}

// CancelCurrent cancels the run in progress, if any.
func (r *Runner) CancelCurrent() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		r.cancel()
	}
}

// RunOptions vary one run.
type RunOptions struct {
	// Snapshot, when set, is patrolled instead of collecting from the
	// source, with the problems its decoding found.
	Snapshot *snapshot.Snapshot
	Problems []snapshot.Problem
	// Probe probes reachability on the given Snapshot too. Off by default
	// so a run over a stored snapshot is reproducible; collected
	// snapshots are always probed.
	Probe bool
	// Scope, when set, makes the run a scoped run: it detects and files
	// only for these resources, their parents and their children, and
	// never resolves a finding outside them. Reason says why (the report
	// records both).
	Scope  []string
	Reason string
}

// Run executes one patrol run. It returns ErrBusy (as *BusyError) when a
// run is in progress. A run that fails still returns its report (status
// error) along with the error.
func (r *Runner) Run(ctx context.Context, trigger Trigger, ro RunOptions) (*Report, error) {
	a, err := r.admit(ctx, trigger)
	if err != nil {
		return nil, err
	}
	return a.run(ro)
}

// Start admits a run and executes it in the background, returning its id
// at once (or *BusyError). done, if not nil, receives the result. The run
// is bound to ctx, not to the caller's request.
func (r *Runner) Start(ctx context.Context, trigger Trigger, ro RunOptions, done func(*Report, error)) (string, error) {
	a, err := r.admit(ctx, trigger)
	if err != nil {
		return "", err
	}
	go func() {
		rep, err := a.run(ro)
		if done != nil {
			done(rep, err)
		}
	}()
	return a.id, nil
}

// runTimeout is the cause of a run's own deadline: its errors then name
// the key an operator sets (docs/CONFIGURATION.md).
type runTimeout time.Duration

func (t runTimeout) Error() string {
	return fmt.Sprintf("run_timeout (%s) exceeded", time.Duration(t))
}

// namedTimeout names run_timeout on an error the run's deadline caused.
func namedTimeout(ctx context.Context, err error) error {
	var rt runTimeout
	if err == nil || errors.As(err, &rt) || !errors.As(context.Cause(ctx), &rt) {
		return err
	}
	return fmt.Errorf("%w: %w", rt, err)
}

// admission is a run that holds the lock and has not executed yet.
type admission struct {
	r       *Runner
	id      string
	trigger Trigger
	started time.Time
	set     Settings
	ctx     context.Context
	cancel  context.CancelFunc
}

// admit takes the run lock for a new run id (compare-and-clear on release).
func (r *Runner) admit(ctx context.Context, trigger Trigger) (*admission, error) {
	started := r.opts.Now()
	a := &admission{r: r, id: findings.NewID(started), trigger: trigger, started: started, set: r.opts.Settings()}
	if a.set.Timeout > 0 {
		a.ctx, a.cancel = context.WithTimeoutCause(ctx, a.set.Timeout, runTimeout(a.set.Timeout))
	} else {
		a.ctx, a.cancel = context.WithCancel(ctx)
	}
	if err := r.acquire(ctx, a.id, a.cancel); err != nil {
		a.cancel()
		r.opts.Metrics.skippedRun(trigger)
		return nil, err
	}
	return a, nil
}

func (a *admission) run(ro RunOptions) (*Report, error) {
	r, ctx := a.r, a.ctx
	defer a.cancel()
	defer r.release(a.id)
	rep := newReport(a.id, a.trigger, a.started)
	if err := r.opts.Store.StartRun(ctx, findings.RunRecord{ID: a.id, Trigger: string(a.trigger), Analysis: rep.Analysis, StartedAt: a.started}); err != nil {
		return nil, namedTimeout(ctx, fmt.Errorf("record run start: %w", err))
	}
	err := r.execute(ctx, a.set, rep, ro)
	r.finish(a.id)
	r.plain.Round()
	if rep.Status != StatusError {
		r.handOver(context.WithoutCancel(ctx), a.set, rep)
	}
	r.opts.Metrics.observe(rep, r.opts.Now().Sub(a.started))
	if r.opts.AfterCommit != nil {
		r.opts.AfterCommit(rep)
	}
	if r.opts.Release != nil {
		r.opts.Release()
	}
	return rep, namedTimeout(ctx, err)
}
