// Package daemon is patrold's composition root: the one place that builds
// components from a config.Config, maps the configuration onto their
// Options, registers each part's teardown right after creating it and stops
// them in reverse order. It holds no domain rules. Every command of
// cmd/patrold that needs components asks a Root (or the Daemon built on
// one) for them: `serve` runs a Daemon, `notify` a notifier, `run` calls
// RunOnce, `assistant run` and `approvals` ask for an Assistant.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/msgauth"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/findings/outcome"
	"github.com/patrold/patrold/internal/dirlock"
	"github.com/patrold/patrold/internal/instance"
	"github.com/patrold/patrold/internal/logging"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/prompt"
	"github.com/patrold/patrold/model/providers"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/patrol/analyst"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/demo"
	"github.com/patrold/patrold/snapshot/exec"
	"github.com/patrold/patrold/snapshot/file"
	"github.com/patrold/patrold/snapshot/multi"
	"github.com/patrold/patrold/snapshot/probe"
	promsource "github.com/patrold/patrold/snapshot/prometheus"
	"github.com/patrold/patrold/snapshot/proxmox"
	"github.com/patrold/patrold/snapshot/sources"
	"github.com/patrold/patrold/store"
)

// DBFile is the SQLite database under data_dir.
const DBFile = "patrold.db"

// RootOptions are what a Root needs besides the configuration.
type RootOptions struct {
	Stderr     io.Writer // log destination (default os.Stderr)
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	Now        func() time.Time
}

// ConfigError is a part refused because of what the configuration says
// (a bad threshold, an unreadable token file, an unknown model): the
// command line reports it as a usage error.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErr(err error) error {
	if err == nil {
		return nil
	}
	return &ConfigError{Err: err}
}

// Root builds patrold's parts from one configuration on first use, each
// once, and stops what it built in reverse order on Close. A Root is safe
// for concurrent use.
type Root struct {
	cfg *config.Config
	o   RootOptions
	log *slog.Logger
	td  teardown

	lead *cluster.Leadership

	mu    sync.Mutex
	st    *store.Store
	name  string        // the stable instance name, once read
	guard *bus.Guard    // the deployment key's, once loaded
	lock  *dirlock.Lock // data_dir, when this process took it
}

// NewRoot returns a root for cfg; nothing is built until asked for.
func NewRoot(cfg *config.Config, o RootOptions) (*Root, error) {
	if cfg == nil {
		return nil, errors.New("daemon: Config is required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Registerer == nil {
		reg := prometheus.NewRegistry()
		o.Registerer, o.Gatherer = reg, reg
	}
	r := &Root{cfg: cfg, o: o, log: newLogger(cfg, o.Stderr), lead: cluster.NewLeadership(cfg.Clustered(), o.Now)}
	r.td.log = r.log
	return r, nil
}

func newLogger(cfg *config.Config, w io.Writer) *slog.Logger { return logging.New(cfg.Log, w) }

// Close stops every part the root built, last built first; it is
// idempotent.
func (r *Root) Close() error { return r.td.stop(context.Background()) }

// Leadership says whether this instance is the writer now (always, for a
// single instance; the leader lease's holder in cluster mode) and
// announces each change (Changed, OnChange). The daemon attaches its lease
// when NATS starts; until then a clustered instance is a standby.
func (r *Root) Leadership() *cluster.Leadership { return r.lead }

// Clustered reports cluster mode (the configuration has a cluster section).
func (r *Root) Clustered() bool { return r.cfg.Clustered() }

// Instance is the stable instance name: cluster.instance, or the name kept
// in data_dir (generated and kept on first use). It is the leader lease's
// holder, so a restarted instance reclaims its own lease at once.
func (r *Root) Instance() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.name != "" {
		return r.name, nil
	}
	configured := ""
	if r.cfg.Cluster != nil {
		configured = r.cfg.Cluster.Instance
	}
	name, err := instance.Name(r.cfg.DataDir, configured)
	if err != nil {
		return "", err
	}
	r.name = name
	return name, nil
}

// KeyFile is a single instance's generated deployment key, under
// data_dir.
const KeyFile = "bus.key"

// MakeKey is how to make a deployment key file (what `config check`
// says when cluster mode has none).
const MakeKey = `(umask 077; echo "k1 $(head -c 32 /dev/urandom | od -An -v -tx1 | tr -d ' \n')" > /etc/patrold/bus.key)`

// Guard is the deployment key's guard: it signs what this process sends
// on the bus and verifies what it receives (docs/NATS.md, trust
// boundaries). The key is cluster.secret_file in cluster mode (required)
// and `<data_dir>/bus.key` for a single instance; serve generates that
// one (0600) on first start (create), a worker or notifier only reads it.
func (r *Root) Guard(create bool) (*bus.Guard, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.guard != nil {
		return r.guard, nil
	}
	keys, err := loadKeys(r.cfg, create)
	if err != nil {
		return nil, configErr(err)
	}
	// The wall clock, whatever r.o.Now says: the replay window is
	// measured against the NATS server's clock.
	auth, err := msgauth.New(keys, msgauth.Options{})
	if err != nil {
		return nil, configErr(err)
	}
	g, err := bus.NewGuard(auth, r.log, r.o.Registerer)
	if err != nil {
		return nil, err
	}
	r.guard = g
	return g, nil
}

// loadKeys reads the deployment key; create generates a single
// instance's key when it has none yet. Without create a missing key is
// an error, but for check (which reads what exists).
func loadKeys(cfg *config.Config, create bool) ([]msgauth.Key, error) {
	return readKeys(cfg, create, false)
}

func readKeys(cfg *config.Config, create, check bool) ([]msgauth.Key, error) {
	if cfg.Cluster != nil {
		if cfg.Cluster.SecretFile == "" {
			return nil, errors.New("cluster.secret_file: cluster mode needs the deployment key every instance, worker and notifier shares; make one with " +
				MakeKey + " and copy it to each host (docs/NATS.md)")
		}
		keys, err := msgauth.LoadFile(cfg.Cluster.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("cluster.secret_file: %w", err)
		}
		return keys, nil
	}
	path := filepath.Join(cfg.DataDir, KeyFile)
	if !create {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			if check {
				return nil, nil // serve generates it
			}
			return nil, fmt.Errorf("deployment key: %s does not exist: serve generates it in its data_dir on first start; "+
				"point cluster.secret_file at a copy of it (mode 0600) or share that data_dir (docs/NATS.md)", path)
		}
		return msgauth.LoadFile(path)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("data_dir: %w", err)
	}
	return msgauth.LoadOrCreate(path, time.Now())
}

// newBus builds a Bus on o that signs and verifies with the deployment
// key (create: serve's, see Guard).
func (r *Root) newBus(o bus.Options, log *slog.Logger, reg prometheus.Registerer, create bool, with ...bus.Option) (*bus.Bus, error) {
	g, err := r.Guard(create)
	if err != nil {
		return nil, err
	}
	auth := embeddedAuth(r.cfg)
	auth.Registerer = reg
	with = append([]bus.Option{bus.WithEmbedded(auth.Starter()), bus.WithGuard(g)}, with...)
	return bus.New(o, log, reg, with...)
}

// DBPath is the database file under data_dir.
func (r *Root) DBPath() string { return dbPath(r.cfg) }

func dbPath(cfg *config.Config) string { return filepath.Join(cfg.DataDir, DBFile) }

// Store opens the findings store under data_dir (once) and registers its
// close.
func (r *Root) Store(ctx context.Context) (*store.Store, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.st != nil {
		return r.st, nil
	}
	var st *store.Store
	err := withMigrationLock(r.cfg.DataDir, func() (err error) {
		st, err = store.Open(ctx, dbPath(r.cfg))
		return err
	})
	if err != nil {
		return nil, err
	}
	r.st = st
	r.td.push("store", func(context.Context) error { return st.Close() })
	return st, nil
}

// MigrateLockFile is flocked while a process opens (and migrates) the
// database, so two first starts never migrate at once.
const MigrateLockFile = "patrold.migrate.lock"

// withMigrationLock runs fn holding an exclusive flock on data_dir's
// migration lock file, waiting for another process's open to finish.
func withMigrationLock(dir string, fn func() error) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("data_dir %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, MigrateLockFile), os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	defer f.Close() // drops the flock
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	return fn()
}

// Lock takes data_dir for this process (serve; run without a daemon)
// before anything in it is opened, and releases it last on Close. Another
// process holding it is a *dirlock.HeldError naming the holder. command
// and api (the HTTP address, "" for none) describe this process to later
// ones.
func (r *Root) Lock(command, api string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lock != nil {
		return nil
	}
	l, err := dirlock.Acquire(r.cfg.DataDir, command, api)
	if err != nil {
		return err
	}
	r.lock = l
	r.td.push("data_dir lock", func(context.Context) error { return l.Release() })
	return nil
}

// setLockAPI records the bound API address in the data_dir lock.
func (r *Root) setLockAPI(api string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lock.SetAPI(api)
}

// Check reads what serve reads from files besides the configuration
// (token files, the configured source and model), so `config check` and
// `serve` refuse what the daemon would refuse, naming the key.
func (r *Root) Check() error { return checkFiles(r.cfg) }

func checkFiles(cfg *config.Config) error {
	if _, err := api.TokensFromConfig(tokenSpecs(cfg)); err != nil {
		return err
	}
	if _, err := runSettings(cfg, time.Now); err != nil {
		return err
	}
	if _, err := readKeys(cfg, false, true); err != nil {
		return err
	}
	_, err := newShared(cfg, nil, nil)
	return err
}

// Source builds the configured snapshot source (`snapshot collect`).
func (r *Root) Source() (snapshot.Source, error) {
	src, err := newSource(r.cfg, r.o.Now, nil)
	return src, configErr(err)
}

// Replay supplies the model provider of a re-execution from the store
// (the recorded exchange of a run or a session); nil: the configured model.
type Replay func(*store.Store) (model.Provider, error)

// RunOnce runs one patrol in the foreground on the root's store (`patrold
// run`): the configured source unless ro carries a snapshot, the configured
// model unless replay supplies one.
func (r *Root) RunOnce(ctx context.Context, ro patrol.RunOptions, replay Replay) (*patrol.Report, error) {
	set, err := runSettings(r.cfg, r.o.Now)
	if err != nil {
		return nil, configErr(err)
	}
	st, err := r.Store(ctx)
	if err != nil {
		return nil, err
	}
	// The source again, keeping what it reads in the store: the next
	// `patrold run` reads again only what changed (docs/SOURCES.md).
	if set.Source, err = buildSource(r.cfg, r.o.Now, sourceMetrics{keep: st}); err != nil {
		return nil, configErr(err)
	}
	var provider model.Provider
	if replay != nil {
		if provider, err = replay(st); err != nil {
			return nil, err
		}
	}
	sh, err := newShared(r.cfg, provider, nil)
	if err != nil {
		return nil, configErr(err)
	}
	if set.Analyst, err = newAnalyst(r.cfg, sh, st, nil, r.o.Now); err != nil {
		return nil, configErr(err)
	}
	set.Model = modelRef(r.cfg, sh)
	runner, err := patrol.New(patrol.Options{Store: st, Settings: func() patrol.Settings { return set }, History: st})
	if err != nil {
		return nil, err
	}
	return runner.Run(ctx, patrol.TriggerManual, ro)
}

// Assistant builds an Assistant over the configured source, thresholds,
// actions, autonomy and model on the root's store (`assistant run`, the
// local path of `approvals`). It publishes nothing (no NATS); rec, when
// set, records outcomes; provider, when set, replaces the configured model.
func (r *Root) Assistant(ctx context.Context, rec assistant.Recorder, provider model.Provider) (*assistant.Assistant, error) {
	st, err := r.Store(ctx)
	if err != nil {
		return nil, err
	}
	cfg := r.cfg
	pol, err := alerts.New(cfg.Alerts)
	if err != nil {
		return nil, configErr(err)
	}
	src, err := newSource(cfg, r.o.Now, nil)
	if err != nil {
		return nil, configErr(err)
	}
	if provider == nil {
		if provider, err = providers.New(cfg.Model, nil); err != nil {
			return nil, configErr(err)
		}
	}
	o := assistantOptions(cfg, provider)
	o.Store, o.Recorder = st, rec
	o.Source, o.Thresholds = func() snapshot.Source { return src }, func() signals.Thresholds { return pol }
	if rec != nil {
		// A fix_verified outcome resolves only once patrold's own check
		// confirms it.
		o.Recorder = outcome.Confirmed{Recorder: rec, Check: assistant.ConditionCheck(st.Get, o.Source, o.Thresholds)}
	}
	asst, err := assistant.New(o)
	return asst, configErr(err)
}

// assistantOptions maps the configuration onto a session's options (the
// actions, autonomy, assistant and investigation sections, the model's
// prices, budget and name) around provider; the caller adds the store, the
// source, the thresholds and where events go.
func assistantOptions(cfg *config.Config, provider model.Provider) assistant.Options {
	o := assistant.Options{
		Actions: actionSpecs(cfg), Autonomy: func() findings.Autonomy { return findings.Autonomy(cfg.Patrol.Autonomy) },
		Provider: provider, Config: assistantSettings(cfg), SessionTimeout: cfg.Investigation.Timeout,
		Prices: cfg.Model.Prices, Budget: cfg.Model.Budget, EvidenceBudget: cfg.Investigation.EvidenceBudget,
		MaskNames: cfg.Model.MaskNames,
	}
	if ep, ok := cfg.Model.Endpoint(); ok {
		o.ModelName, o.MaxOutputTokens = ep.Model, ep.MaxOutputTokens
	} else if provider != nil {
		o.ModelName = provider.Name() // the script provider prices as "script"
	}
	return o
}

// sourceMetrics are the metrics a source is built with: prebuilt ones
// (a daemon's, registered once) or a registerer to register new ones on
// (nil: none).
type sourceMetrics struct {
	reg  prometheus.Registerer
	prom *promsource.Metrics
	pve  *proxmox.Metrics
	pbs  *proxmox.PBSMetrics
	// keep keeps the Proxmox source's guest copies (the store); nil
	// keeps them in memory only.
	keep proxmox.Keeper
}

// newSource builds the configured snapshot source without metrics (the
// command line's one-shot commands).
func newSource(cfg *config.Config, now func() time.Time, reg prometheus.Registerer) (snapshot.Source, error) {
	return buildSource(cfg, now, sourceMetrics{reg: reg})
}

// buildSource builds the source section's source, or with a sources list
// one source of them all (snapshot/multi).
func buildSource(cfg *config.Config, now func() time.Time, m sourceMetrics) (snapshot.Source, error) {
	if len(cfg.Sources) == 0 {
		return buildOne(cfg.Source, now, m)
	}
	members := make([]multi.Member, len(cfg.Sources))
	for i, sm := range cfg.Sources {
		src, err := buildOne(sm.Config(cfg.Source), now, m)
		if err != nil {
			return nil, fmt.Errorf("sources[%d] (%s): %w", i, sm.Name, err)
		}
		members[i] = multi.Member{Name: sm.Name, Source: src}
	}
	return multi.New(members)
}

func buildOne(sc sources.Config, now func() time.Time, m sourceMetrics) (snapshot.Source, error) {
	switch sc.Kind {
	case "demo":
		return demo.New(sc.Demo, now)
	case "file":
		return file.New(sc.File)
	case "exec":
		return exec.New(sc.Exec)
	case "prometheus":
		o := sc.Prometheus
		o.Registerer, o.Metrics = m.reg, m.prom
		return promsource.New(o)
	case "proxmox":
		o := sc.Proxmox
		o.Now, o.Registerer, o.Metrics, o.Keeper = now, m.reg, m.pve, m.keep
		return proxmox.New(o)
	case "pbs":
		o := sc.PBS
		o.Now, o.Registerer, o.Metrics = now, m.reg, m.pbs
		return proxmox.NewPBS(o)
	}
	return nil, fmt.Errorf("source.kind: %q is not one of %s", sc.Kind, strings.Join(sources.Kinds, ", "))
}

// runSettings derives the per-run settings from cfg with a source and a
// prober of their own, without metrics (the command line; config check).
func runSettings(cfg *config.Config, now func() time.Time) (patrol.Settings, error) {
	if _, err := alerts.New(cfg.Alerts); err != nil {
		return patrol.Settings{}, err
	}
	src, err := newSource(cfg, now, nil)
	if err != nil {
		return patrol.Settings{}, err
	}
	prober, err := probe.New(probeOptions(cfg))
	if err != nil {
		return patrol.Settings{}, err
	}
	return settingsWith(cfg, src, prober)
}

// settingsWith maps cfg onto the per-run settings around a source and a
// prober.
func settingsWith(cfg *config.Config, src snapshot.Source, prober patrol.Prober) (patrol.Settings, error) {
	pol, err := alerts.New(cfg.Alerts)
	if err != nil {
		return patrol.Settings{}, err
	}
	return patrol.Settings{
		Policy: pol, Source: src, Prober: prober, Timeout: cfg.Schedule.RunTimeout,
		Publish:  cfg.Findings.Policy(),
		Autonomy: findings.Autonomy(cfg.Patrol.Autonomy),
		// The one place the investigation gate's numbers are read.
		Gate:              cfg.Investigation.Gate(),
		ResolvedRetention: cfg.Findings.ResolvedRetention, Retention: retention(cfg),
	}, nil
}

// ledgerFunc adapts a function to model.SpendLedger (the store is opened
// after the analyst is built).
type ledgerFunc func(since time.Time) (float64, error)

// Spent implements model.SpendLedger.
func (f ledgerFunc) Spent(since time.Time) (float64, error) { return f(since) }

// shared are the model-side parts built once per process: their metrics
// can be registered only once, and the patrol and assistant sides share
// them.
type shared struct {
	provider     model.Provider // nil: no model
	neutraliser  *prompt.Neutraliser
	agentMetrics *agent.Metrics
	registerer   prometheus.Registerer
}

// newShared builds the shared parts from the model section; provider, when
// not nil, replaces the configured one (replaying a recorded exchange). The
// model section is read once: changing it takes a restart.
func newShared(cfg *config.Config, provider model.Provider, reg prometheus.Registerer) (*shared, error) {
	s := &shared{provider: provider, registerer: reg}
	var err error
	if s.provider == nil {
		if s.provider, err = providers.New(cfg.Model, reg); err != nil {
			return s, err
		}
	}
	if s.neutraliser, err = prompt.NewNeutraliser(reg); err != nil {
		return s, err
	}
	if s.agentMetrics, err = agent.NewMetrics(reg); err != nil {
		return s, err
	}
	return s, nil
}

// newAnalyst builds the model stages, or returns nil without a provider.
func newAnalyst(cfg *config.Config, sh *shared, ledger model.SpendLedger, log *slog.Logger, now func() time.Time) (patrol.Analyst, error) {
	if sh.provider == nil {
		return nil, nil
	}
	o := analyst.Options{Provider: sh.provider, Prices: cfg.Model.Prices, Budget: cfg.Model.Budget, Ledger: ledger,
		Neutraliser: sh.neutraliser, AgentMetrics: sh.agentMetrics, Registerer: sh.registerer, Logger: log, Now: now,
		ModelFindings: analyst.ModelFindingLimits{MaxPerRun: cfg.Patrol.ModelFindings.MaxPerRun, MaxPerResource: cfg.Patrol.ModelFindings.MaxPerResource}}
	if ep, ok := cfg.Model.Endpoint(); ok {
		o.Model, o.MaxOutputTokens = ep.Model, ep.MaxOutputTokens
	}
	o.ContextWindow = cfg.Model.Window()
	o.MaskNames = cfg.Model.MaskNames
	a, err := analyst.New(o)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	return a, nil
}

// modelRef names the model of the shared parts: the provider's name and
// the configured model name (the provider's name for script and replay).
func modelRef(cfg *config.Config, sh *shared) patrol.ModelRef {
	if sh.provider == nil {
		return patrol.ModelRef{}
	}
	ref := patrol.ModelRef{Provider: sh.provider.Name(), Model: sh.provider.Name()}
	if ep, ok := cfg.Model.Endpoint(); ok && ref.Provider == cfg.Model.Provider {
		ref.Model = ep.Model
	}
	return ref
}

// assistantSettings maps the assistant section onto the assistant's own
// settings.
func assistantSettings(cfg *config.Config) assistant.Settings { return cfg.Assistant }

// actionSpecs maps the actions section onto the assistant's declarations.
func actionSpecs(cfg *config.Config) []assistant.ActionSpec { return cfg.Actions }

// Tokens are the API tokens of http.tokens, token files read (a CLI
// client picks one to talk to the daemon).
func (r *Root) Tokens() ([]api.Token, error) { return api.TokensFromConfig(tokenSpecs(r.cfg)) }

// tokenSpecs maps http.tokens onto the API's token declarations.
func tokenSpecs(cfg *config.Config) []api.TokenSpec {
	out := make([]api.TokenSpec, 0, len(cfg.HTTP.Tokens))
	for _, t := range cfg.HTTP.Tokens {
		out = append(out, t.Spec())
	}
	return out
}

// retention maps the retention section onto the findings' retention.
func retention(cfg *config.Config) findings.Retention { return cfg.Retention }

// probeOptions maps source.probe onto the prober's options.
func probeOptions(cfg *config.Config) probe.Options { return cfg.Source.Probe }
