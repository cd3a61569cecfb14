package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot/sources"
	"github.com/patrold/patrold/store"
)

// Options configure a Daemon.
type Options struct {
	Config     *config.Config
	ConfigPath string          // re-read on reload; "" reloads the default paths
	Reload     <-chan struct{} // SIGHUP
	Stderr     io.Writer       // log destination (default os.Stderr)
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	Now        func() time.Time
	// LoadConfig re-reads the configuration on reload (default
	// config.LoadFile(ConfigPath)).
	LoadConfig func() (*config.Config, error)
	// AcceptNewDatabase starts a single instance on a new or empty
	// database even though the events stream already holds its finding
	// events (serve --accept-new-database).
	AcceptNewDatabase bool
}

// Daemon is the running patrold: store, runner, scheduler and friends.
type Daemon struct {
	opts     Options
	root     *Root
	log      *slog.Logger
	reload   *config.Reloader
	live     *live
	settings atomic.Pointer[patrol.Settings]

	store  *store.Store
	runner *patrol.Runner
	// integrity is the quick_check verdict after the last failed run
	// (readiness condition "integrity").
	integrity integrityMemo
	// triggers admits the scoped runs alerts ask for (POST
	// /api/v1/hooks/alertmanager).
	triggers *patrol.Triggers
	sched    *patrol.Scheduler
	msg      *messaging
	cluster  *cluster.Member // cluster mode
	met      *metrics
	analyst  patrol.Analyst
	model    patrol.ModelRef // the model behind analyst (read once, like it)
	shared   *shared
	worker   *assistant.Worker

	httpAddr  string
	startedAt time.Time

	dbLostOnce sync.Once

	mu      sync.Mutex
	started bool
	stopped bool
	runCtx  context.Context
	wg      sync.WaitGroup // runs in progress
	bg      sync.WaitGroup // goroutines on runCtx that are not runs (the watchdog)
}

// New builds every component from opts.Config; nothing runs until Start.
func New(opts Options) (*Daemon, error) {
	if opts.Config == nil {
		return nil, errors.New("daemon: Config is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Registerer == nil {
		reg := prometheus.NewRegistry()
		opts.Registerer, opts.Gatherer = reg, reg
	}
	if opts.LoadConfig == nil {
		path := opts.ConfigPath
		opts.LoadConfig = func() (*config.Config, error) {
			cfg, _, err := config.LoadFile(path)
			return cfg, err
		}
	}
	root, err := NewRoot(opts.Config, RootOptions{Stderr: opts.Stderr, Registerer: opts.Registerer, Gatherer: opts.Gatherer, Now: opts.Now})
	if err != nil {
		return nil, err
	}
	d := &Daemon{opts: opts, root: root, log: root.log, integrity: integrityMemo{ask: make(chan string, 1)}}
	d.live = newLive(opts.Registerer, opts.Now)
	d.live.keep = storeKeeper{d}
	set, err := d.runSettings(opts.Config)
	if err != nil {
		return nil, err
	}
	if d.shared, err = newShared(opts.Config, nil, opts.Registerer); err != nil {
		return nil, err
	}
	d.analyst, err = newAnalyst(opts.Config, d.shared, ledgerFunc(func(since time.Time) (float64, error) {
		if d.store == nil {
			return 0, errors.New("store not open")
		}
		return d.store.Spent(since)
	}), d.log, opts.Now)
	if err != nil {
		return nil, err
	}
	set.Analyst, d.model = d.analyst, modelRef(opts.Config, d.shared)
	set.Model = d.model
	d.reload = config.NewReloader(opts.Config, opts.LoadConfig, d.apply, d.log)
	d.settings.Store(&set)
	d.met = newMetrics(opts.Registerer, d)
	return d, nil
}

// Config returns the configuration in force.
func (d *Daemon) Config() *config.Config { return d.reload.Current() }

// runSettings checks cfg's thresholds, builds the source and prober (their
// metrics registered once per process), and derives the per-run settings
// around them.
func (d *Daemon) runSettings(cfg *config.Config) (patrol.Settings, error) {
	if _, err := alerts.New(cfg.Alerts); err != nil {
		return patrol.Settings{}, err
	}
	src, prober, err := d.live.configure(cfg)
	if err != nil {
		return patrol.Settings{}, err
	}
	return settingsWith(cfg, src, prober)
}

// apply puts a reloaded configuration into effect: the run settings
// (thresholds, source, publish policy) for the next run, and the schedule.
func (d *Daemon) apply(cfg *config.Config) error {
	set, err := d.runSettings(cfg)
	if err != nil {
		return err
	}
	set.Analyst, set.Model = d.analyst, d.model
	d.settings.Store(&set)
	if d.sched != nil {
		return d.sched.Reschedule(cfg.Schedule.Cron)
	}
	return nil
}

// Store returns the findings store (after Start).
func (d *Daemon) Store() *store.Store { return d.store }

// Runner returns the patrol runner (after Start).
func (d *Daemon) Runner() *patrol.Runner { return d.runner }

// Start opens the store, marks runs interrupted by a crash, and starts
// NATS, the assistant worker, the API and the scheduler, in that order.
// Each part registers its stop on the root right after it was created; a
// Start that fails half-way stops what it had started, last first, and
// returns the error.
func (d *Daemon) Start(ctx context.Context) (err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started {
		return errors.New("daemon: already started")
	}
	d.started = true
	defer func() {
		if err != nil {
			d.stopped = true
			err = errors.Join(err, d.root.td.stop(context.Background()))
		}
	}()
	cfg := d.Config()
	// data_dir is this process's before anything in it is opened: a second
	// serve is refused naming the holder, and migrations never race.
	if err := d.root.Lock("serve", cfg.HTTP.Listen); err != nil {
		return err
	}
	// The deployment key before anything is opened: cluster mode without
	// one is refused here.
	if _, err := d.root.Guard(true); err != nil {
		return err
	}
	_, statErr := os.Stat(dbPath(cfg))
	created := errors.Is(statErr, os.ErrNotExist)
	if created {
		d.log.Warn("database file not found: creating a new, empty database", "db", dbPath(cfg))
	}
	st, err := d.root.Store(ctx)
	if err != nil {
		return err
	}
	d.store = st
	if err := st.Check(ctx, false); err != nil {
		return fmt.Errorf("database integrity check at start: %w (restore a backup; patrold db check runs the full check)", err)
	}
	if n, err := st.MarkInterrupted(ctx, d.opts.Now()); err != nil {
		return err
	} else if n > 0 {
		d.log.Warn("runs interrupted by a previous stop were marked error", "runs", n)
	}
	pm := patrol.NewMetrics(d.opts.Registerer)
	if last, err := st.LastSuccessfulRun(ctx); err == nil && last != nil {
		pm.SetLastSuccess(*last)
	}
	d.runner, err = patrol.New(patrol.Options{
		Store: st, Settings: func() patrol.Settings { return *d.settings.Load() },
		Logger: d.log, Now: d.opts.Now, Metrics: pm,
		AfterCommit: d.afterRun, Release: d.releaseMemory, History: st, KeepPlainText: true,
	})
	if err != nil {
		return err
	}
	d.triggers, err = patrol.NewTriggers(patrol.TriggerOptions{Now: d.opts.Now, Registerer: d.opts.Registerer,
		PerResource: cfg.Patrol.Triggers.PerResource, Global: cfg.Patrol.Triggers.Global,
		Start: func(ro patrol.RunOptions) (string, error) { return d.startRun(patrol.TriggerAlert, ro) }})
	if err != nil {
		return err
	}
	if d.msg, err = startMessaging(ctx, d, cfg); err != nil {
		return fmt.Errorf("start nats: %w", err)
	}
	d.root.td.push("nats", func(context.Context) error { return d.msg.stop() })
	// Every commit wakes the relay; its poll is the fallback.
	d.store.OnCommit(d.msg.kick)
	if err := d.startCluster(ctx, cfg); err != nil {
		return fmt.Errorf("start nats: %w", err)
	}
	// Before the relay and the first run publish anything.
	if err := d.checkHistory(ctx, created); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.runCtx = runCtx
	d.root.td.push("runs", func(ctx context.Context) error {
		d.drain(ctx)
		cancel()
		d.bg.Wait() // what else runs on runCtx: the watchdog
		return nil
	})
	if err := d.startWorker(runCtx, cfg, cfg.Assistant.Enabled); err != nil {
		return fmt.Errorf("start assistant: %w", err)
	}
	d.msg.startRelay()
	if err := d.startHTTP(); err != nil {
		return err
	}
	if err := d.root.setLockAPI(d.httpAddr); err != nil {
		return err
	}
	sched, err := patrol.NewScheduler(d.schedHooks(), cfg.Schedule.Cron)
	if err != nil {
		return err
	}
	d.sched = sched
	sched.Start(runCtx, cfg.Schedule.StartupDelay, cfg.Schedule.SkipStartupIfRecent)
	d.root.td.push("scheduler", func(context.Context) error { sched.Stop(); return nil })
	d.startedAt = d.opts.Now()
	d.bg.Add(1)
	go func() { defer d.bg.Done(); d.watchdog(runCtx) }()
	d.bg.Add(1)
	go func() { defer d.bg.Done(); d.watchDB(runCtx) }()
	d.bg.Add(1)
	go func() { defer d.bg.Done(); d.watchSilenceEnds(runCtx) }()
	d.bg.Add(1)
	go func() { defer d.bg.Done(); d.checkIntegrity(runCtx) }()
	d.notify("READY=1")
	d.log.Info("patrold started", "data_dir", cfg.DataDir, "source", sources.Describe(cfg.Source, cfg.Sources), "schedule", cfg.Schedule.Cron, "db", st.Path(), "api", d.httpAddr, "nats", d.NATSURL())
	return nil
}

// drain lets the runs in progress finish until ctx is done, then cancels
// the current one and waits for its error record.
func (d *Daemon) drain(ctx context.Context) {
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		if d.runner != nil {
			d.log.Warn("drain timeout: cancelling the run in progress", "run_id", d.runner.Current())
			d.runner.CancelCurrent()
		}
		<-done
	}
}

func (d *Daemon) afterRun(rep *patrol.Report) {
	d.msg.kick()
	d.log.Info("run finished", "run_id", rep.RunID, "trigger", rep.Trigger, "status", rep.Status,
		"signals", len(rep.Signals), "findings", len(rep.Findings), "resolved", len(rep.Resolved), "duration_ms", rep.DurationMS)
	for _, f := range rep.Findings {
		if f.Change == "new" || f.Change == "reopened" || f.Change == "resolved" {
			d.log.Info("finding "+string(f.Change), "id", f.ID, "severity", f.Severity, "key", f.Key, "resource", f.ResourceID, "title", f.Title)
		}
	}
}

// releaseMemory gives a run's peak back to the OS once it has ended:
// the commit connection's page cache, then the Go heap's free pages.
// The C allocator's thresholds are the unit's environment
// (deploy/patrold.service), not code.
func (d *Daemon) releaseMemory() {
	if err := d.store.ReleaseMemory(context.Background()); err != nil {
		d.log.Warn("memory not released after the run", "err", err)
	}
	debug.FreeOSMemory()
}

// Stop refuses new runs and stops every started part in reverse order of
// Start. That is the scheduler, the API, the assistant worker, the runs
// in progress, NATS (flushing the outbox) and the store. The runs finish
// until ctx is done, then are cancelled and wait for their error record.
// It is idempotent and joins every error.
func (d *Daemon) Stop(ctx context.Context) error {
	d.mu.Lock()
	if !d.started || d.stopped {
		d.mu.Unlock()
		return nil
	}
	d.stopped = true
	d.mu.Unlock()
	d.notify("STOPPING=1")
	err := d.root.td.stop(ctx)
	d.log.Info("patrold stopped")
	return err
}

// runInBackground starts a scheduled or startup run; a busy runner skips
// it (the runner counts skipped ticks).
func (d *Daemon) runInBackground(trigger patrol.Trigger) {
	if _, err := d.startRun(trigger, patrol.RunOptions{}); err != nil {
		if errors.Is(err, patrol.ErrBusy) {
			d.log.Info("run skipped: another run is in progress", "trigger", trigger, "err", err)
			return
		}
		d.log.Error("run not started", "trigger", trigger, "err", err)
	}
}

// Reload re-reads and validates the configuration; on error the old one
// stays in force. Thresholds and schedule apply without restart.
func (d *Daemon) Reload() error {
	d.notify("RELOADING=1")
	defer d.notify("READY=1")
	err := d.reload.Reload()
	d.met.reloaded(err == nil, d.opts.Now())
	if err != nil {
		d.log.Error("reload failed; keeping the previous configuration", "err", err)
		return fmt.Errorf("reload: %w", err)
	}
	d.log.Info("configuration reloaded")
	return nil
}

// Run checks what the daemon reads from files (a refusal is a
// *ConfigError), starts the daemon, serves until ctx is cancelled
// (reloading on each Reload signal), then stops within the drain timeout.
func Run(ctx context.Context, opts Options) error {
	if opts.Config != nil {
		if err := checkFiles(opts.Config); err != nil {
			return configErr(err)
		}
	}
	d, err := New(opts)
	if err != nil {
		return err
	}
	if err := d.Start(ctx); err != nil {
		return errors.Join(err, d.Stop(context.Background()))
	}
	for {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), d.Config().Schedule.DrainTimeout)
			defer cancel()
			return d.Stop(sctx)
		case <-opts.Reload:
			_ = d.Reload()
		}
	}
}

// NATSURL is the client URL of the NATS server in use (after Start).
func (d *Daemon) NATSURL() string {
	if d.msg == nil {
		return ""
	}
	return d.msg.bus.ClientURL()
}

// RunNow runs a patrol now in the foreground (tests, the API's trigger).
func (d *Daemon) RunNow(ctx context.Context, trigger patrol.Trigger) (*patrol.Report, error) {
	d.wg.Add(1)
	defer d.wg.Done()
	return d.runner.Run(ctx, trigger, patrol.RunOptions{})
}

func (d *Daemon) schedHooks() patrol.SchedulerHooks {
	lead := d.root.Leadership()
	await := func(ctx context.Context) bool {
		return lead.Await(ctx, d.Config().NATS.Lease.TTL) && d.awaitWriter(ctx, cluster.CatchUpTimeout)
	}
	return patrol.SchedulerHooks{Run: d.runInBackground, Leading: d.IsWriter, AwaitLeading: await,
		LastComplete: d.store.LastCompleteRun, Now: d.opts.Now, Logger: d.log}
}

// IsWriter reports whether this instance may write (schedule runs, change
// state) now: Leadership.IsWriter.
func (d *Daemon) IsWriter() bool { return d.root.Leadership().IsWriter() }

// awaitWriter waits (bounded) until a lease holder has caught up and
// writes, and reports whether it does.
func (d *Daemon) awaitWriter(ctx context.Context, within time.Duration) bool {
	t := time.NewTicker(cluster.LeaderPoll / 2)
	defer t.Stop()
	deadline := time.After(within)
	for !d.IsWriter() {
		select {
		case <-ctx.Done():
			return false
		case <-deadline:
			return d.IsWriter()
		case <-t.C:
		}
	}
	return true
}

// Leadership is the root's leadership (single, leader or standby).
func (d *Daemon) Leadership() *cluster.Leadership { return d.root.Leadership() }
