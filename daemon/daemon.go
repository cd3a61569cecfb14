package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/patrol"
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
}

// Daemon is the running patrold: store, runner, scheduler and friends.
type Daemon struct {
	opts     Options
	log      *slog.Logger
	cfg      atomic.Pointer[config.Config]
	settings atomic.Pointer[patrol.Settings]

	store   *store.Store
	runner  *patrol.Runner
	sched   *scheduler
	msg     *messaging
	met     *metrics
	analyst patrol.Analyst
	shared  Shared
	worker  *assistant.Worker

	http      *http.Server
	httpAddr  string
	wgHTTP    sync.WaitGroup
	wgWorker  sync.WaitGroup
	startedAt time.Time

	mu      sync.Mutex
	started bool
	stopped bool
	runCtx  context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup // runs in progress
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
	d := &Daemon{opts: opts, log: newLogger(opts.Config, opts.Stderr)}
	set, err := RunSettings(opts.Config, opts.Now, opts.Registerer)
	if err != nil {
		return nil, err
	}
	if d.shared, err = NewShared(opts.Config, nil, opts.Registerer); err != nil {
		return nil, err
	}
	d.analyst, err = NewAnalyst(opts.Config, d.shared, ledgerFunc(func(since time.Time) (float64, error) {
		if d.store == nil {
			return 0, errors.New("store not open")
		}
		return d.store.Spent(since)
	}), d.log, opts.Now)
	if err != nil {
		return nil, err
	}
	set.Analyst = d.analyst
	d.cfg.Store(opts.Config)
	d.settings.Store(&set)
	d.met = newMetrics(opts.Registerer, d)
	return d, nil
}

func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Log.Level))
	ho := &slog.HandlerOptions{Level: level}
	if cfg.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, ho))
	}
	return slog.New(slog.NewTextHandler(w, ho))
}

// Config returns the configuration in force.
func (d *Daemon) Config() *config.Config { return d.cfg.Load() }

// Store returns the findings store (after Start).
func (d *Daemon) Store() *store.Store { return d.store }

// Runner returns the patrol runner (after Start).
func (d *Daemon) Runner() *patrol.Runner { return d.runner }

// Start opens the store, marks runs interrupted by a crash, and starts the
// scheduler.
func (d *Daemon) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started {
		return errors.New("daemon: already started")
	}
	d.started = true
	cfg := d.Config()
	if _, err := os.Stat(DBPath(cfg)); errors.Is(err, os.ErrNotExist) {
		d.log.Warn("database file not found: creating a new, empty database", "db", DBPath(cfg))
	}
	st, err := OpenStore(ctx, cfg)
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
		AfterCommit: d.afterRun,
	})
	if err != nil {
		return err
	}
	if d.msg, err = startMessaging(ctx, d, cfg); err != nil {
		return fmt.Errorf("start nats: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.runCtx, d.cancel = runCtx, cancel
	if cfg.Assistant.Enabled {
		if err := d.startWorker(runCtx, cfg); err != nil {
			return fmt.Errorf("start assistant: %w", err)
		}
	}
	d.msg.startRelay()
	if err := d.startHTTP(); err != nil {
		return err
	}
	d.sched, err = newScheduler(d.schedHooks(), cfg)
	if err != nil {
		return err
	}
	d.sched.start(runCtx, cfg)
	d.startedAt = d.opts.Now()
	go d.watchdog(runCtx)
	d.notify("READY=1")
	d.log.Info("patrold started", "data_dir", cfg.DataDir, "source", cfg.Source.Kind, "schedule", cfg.Schedule.Cron, "db", st.Path(), "api", d.httpAddr, "nats", d.NATSURL())
	return nil
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

// Stop refuses new runs, stops the scheduler, lets a run in progress
// finish until ctx is done (then cancels it and waits for its error record),
// stops the API, flushes the outbox, and closes the store: reverse order of
// Start. It is idempotent and joins every error.
func (d *Daemon) Stop(ctx context.Context) error {
	d.mu.Lock()
	if !d.started || d.stopped {
		d.mu.Unlock()
		return nil
	}
	d.stopped = true
	d.mu.Unlock()
	d.notify("STOPPING=1")
	var errs []error
	if d.sched != nil {
		d.sched.stop()
	}
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
	if d.cancel != nil {
		d.cancel()
	}
	d.wgWorker.Wait()
	if d.http != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, d.http.Shutdown(sctx))
		cancel()
		d.wgHTTP.Wait()
	}
	errs = append(errs, d.msg.stop())
	if d.store != nil {
		errs = append(errs, d.store.Close())
	}
	d.log.Info("patrold stopped")
	return errors.Join(errs...)
}

// runInBackground starts a scheduled or startup run; a busy runner skips
// it (the runner counts skipped ticks).
func (d *Daemon) runInBackground(trigger patrol.Trigger) {
	if _, err := d.startRun(trigger); err != nil {
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
	cfg, err := d.opts.LoadConfig()
	if err == nil {
		old := d.Config()
		for key, changed := range map[string]bool{
			"data_dir": cfg.DataDir != old.DataDir, "http.listen": cfg.HTTP.Listen != old.HTTP.Listen,
			"http.tokens": fmt.Sprint(cfg.HTTP.Tokens) != fmt.Sprint(old.HTTP.Tokens), "nats": cfg.NATS.String() != old.NATS.String(),
			"model": fmt.Sprintf("%+v", cfg.Model) != fmt.Sprintf("%+v", old.Model), "log": cfg.Log != old.Log,
			"assistant": cfg.Assistant != old.Assistant, "actions": fmt.Sprint(cfg.Actions) != fmt.Sprint(old.Actions),
			"notify": fmt.Sprint(cfg.Notify) != fmt.Sprint(old.Notify),
		} {
			if changed {
				d.log.Warn("configuration key changed on reload takes effect after a restart", "key", key)
			}
		}
		var set patrol.Settings
		set, err = RunSettings(cfg, d.opts.Now, d.opts.Registerer)
		set.Analyst = d.analyst
		if err == nil {
			d.cfg.Store(cfg)
			d.settings.Store(&set)
			if d.sched != nil {
				err = d.sched.reschedule(cfg)
			}
		}
	}
	d.met.reloaded(err == nil, d.opts.Now())
	if err != nil {
		d.log.Error("reload failed; keeping the previous configuration", "err", err)
		return fmt.Errorf("reload: %w", err)
	}
	d.log.Info("configuration reloaded")
	return nil
}

// Run starts the daemon, serves until ctx is cancelled (reloading on each
// Reload signal), then stops within the drain timeout.
func Run(ctx context.Context, opts Options) error {
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
