package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/cluster/sessions"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/findings/outcome"
	"github.com/patrold/patrold/notify"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// Consumer and lease names used by the daemon.
const (
	OutcomesDurable = "patrold-outcomes"
	LeaseKey        = "scheduler"
	flushTimeout    = 5 * time.Second
)

// messaging owns the NATS connection (and embedded server), the outbox
// relay, the outcome consumer and the leader lease.
type messaging struct {
	bus       *bus.Bus
	transport *bus.Transport
	relay     *bus.Relay
	lease     *bus.Lease
	outcomes  bus.ConsumerOptions
	cancel    context.CancelFunc
	runCtx    context.Context
	log       *slog.Logger
	wg        sync.WaitGroup
}

// BusOptions completes the nats section for serve on this data dir:
// with nats.url empty, the embedded server keeps its files under
// <data_dir>/nats and serve connects with the daemon's generated nkey
// (unless the section names other credentials).
func BusOptions(cfg *config.Config) bus.Options {
	o := cfg.NATS
	if o.URL == "" {
		if o.Embedded.StoreDir == "" {
			o.Embedded.StoreDir = filepath.Join(cfg.DataDir, "nats")
		}
		withRole(&o, cfg.DataDir, embedded.RoleDaemon)
	}
	return o
}

// withRole sets the role's generated nkey seed (under dataDir) when the
// section names no credentials of its own.
func withRole(o *bus.Options, dataDir string, r embedded.Role) {
	if o.CredentialsFile == "" && o.NkeyFile == "" && o.User == "" && o.TokenFile == "" {
		o.NkeyFile = NATSSeedFile(dataDir, r)
	}
}

// NATSSeedFile is the path of a role's nkey seed for the embedded
// server, which serve generates (0600) in its data_dir on first start.
func NATSSeedFile(dataDir string, r embedded.Role) string {
	return filepath.Join(dataDir, embedded.SeedFile(r))
}

// embeddedAuth is the embedded server's users: their seeds in data_dir,
// their permissions naming this configuration's subjects, work queue and
// notify sinks.
func embeddedAuth(cfg *config.Config) embedded.Auth {
	return embedded.Auth{Dir: cfg.DataDir, Names: EmbeddedNames(cfg)}
}

// EmbeddedNames are what the embedded server's permissions name for
// cfg: its subjects, stream, lease bucket, work queue and the consumers
// of serve's notify sinks.
func EmbeddedNames(cfg *config.Config) embedded.Names {
	o := cfg.NATS.WithDefaults()
	n := embedded.Names{Prefix: o.SubjectPrefix, Stream: o.Stream.Name, LeaseBucket: o.Lease.Bucket, WorkQueue: assistant.DefaultDurable,
		Outcomes: OutcomesDurable}
	for _, c := range cfg.Notify.Consumers(n.Prefix) {
		n.Notify = append(n.Notify, embedded.Sink{Durable: c.Durable, Filters: c.Filters, Replay: c.Replay})
	}
	return n
}

// clientBusOptions is the nats section for a process that is a client of
// another's server (`notify`, `worker`): with nats.url empty it connects to
// the embedded server of the local `patrold serve` (nats.embedded.listen)
// instead of starting one, with the role's generated nkey from the same
// data_dir unless the section names other credentials.
func clientBusOptions(cfg *config.Config, command string, r embedded.Role) (bus.Options, error) {
	o := cfg.NATS
	if o.URL != "" {
		return o, nil
	}
	host, port, err := net.SplitHostPort(o.Embedded.Listen)
	if err != nil || port == "0" {
		return o, fmt.Errorf("nats.url: required for patrold %s when nats.embedded.listen (%q) names no fixed port", command, o.Embedded.Listen)
	}
	o.URL = "nats://" + net.JoinHostPort(host, port)
	withRole(&o, cfg.DataDir, r)
	if o.NkeyFile == NATSSeedFile(cfg.DataDir, r) {
		if _, err := os.Stat(o.NkeyFile); err != nil {
			return o, fmt.Errorf("nats.nkey_file: %w: patrold serve generates the embedded server's credentials in its data_dir on first start; "+
				"run patrold %s with serve's data_dir or set nats.nkey_file (docs/NATS.md)", err, command)
		}
	}
	return o, nil
}

func startMessaging(ctx context.Context, d *Daemon, cfg *config.Config) (*messaging, error) {
	b, err := d.root.newBus(BusOptions(cfg), d.log, d.opts.Registerer, true)
	if err != nil {
		return nil, err
	}
	if err := b.Start(ctx); err != nil {
		return nil, err
	}
	m := &messaging{bus: b, log: d.log}
	fail := func(err error) (*messaging, error) { return nil, errors.Join(err, b.Close()) }
	m.relay, err = bus.NewRelay(bus.RelayOptions{
		Outbox: d.store, JetStream: b.JetStream(), Prefix: b.Prefix(), Source: b.Source(), DataRef: findingDataRef(cfg.HTTP),
		Batch: cfg.NATS.Outbox.Batch, Retention: cfg.NATS.Outbox.Retention, Logger: d.log, Registerer: d.opts.Registerer,
		Guard: b.Guard(), Interval: relayInterval,
	})
	if err != nil {
		return fail(err)
	}
	tr, err := bus.NewTransport(bus.TransportOptions{JetStream: b.JetStream(), Prefix: b.Prefix(), Stream: b.StreamName(),
		Source: b.Source(), Logger: d.log, Registerer: d.opts.Registerer, Guard: b.Guard()})
	if err != nil {
		return fail(err)
	}
	m.transport = tr
	lead := d.root.Leadership()
	if lead.Clustered() {
		// The holder is the stable instance name: a restart (kill -9
		// included) reclaims its own lease at once.
		name, err := d.root.Instance()
		if err != nil {
			return fail(err)
		}
		m.lease, err = bus.NewLease(b.JetStream(), bus.LeaseOptions{Bucket: cfg.NATS.Lease.Bucket, Key: LeaseKey,
			Holder: name, TTL: cfg.NATS.Lease.TTL, Replicas: cfg.NATS.Stream.Replicas, Logger: d.log, Now: d.opts.Now, OnChange: lead.LeaseChanged})
		if err != nil {
			return fail(err)
		}
		lead.Attach(m.lease)
	}
	// The outcome consumer exists before anything is published: consumers
	// start with new messages.
	outcomes := bus.ConsumerOptions{Stream: b.StreamName(), Durable: OutcomesDurable,
		Subject: contracts.FullSubject(b.Prefix(), contracts.SubjectRemediationOutcomes)}
	if err := tr.EnsureOutcomeConsumer(ctx, outcomes); err != nil {
		return fail(err)
	}
	m.outcomes = outcomes
	// So is the shared request consumer: requests wait in it for a
	// standalone worker that connects later.
	requests := assistant.RequestConsumerOptions(b.StreamName(), contracts.FullSubject(b.Prefix(), contracts.SubjectRemediationRequests),
		cfg.Investigation.Timeout, storeRetry(cfg), cfg.Investigation.MaxConcurrent)
	if err := tr.EnsureRequestConsumer(ctx, requests); err != nil {
		return fail(err)
	}
	notifier, err := startNotify(ctx, cfg, b, d)
	if err != nil {
		return fail(err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.cancel, m.runCtx = cancel, runCtx
	if m.lease != nil {
		m.goRun(func() error { return m.lease.Run(runCtx) })
	}
	if m.lease == nil {
		// A single instance is always the writer; in cluster mode the
		// Member runs these while this instance is the writer.
		m.goRun(func() error { m.consumeOutcomes(runCtx, d); return nil })
		m.goRun(func() error { m.serveSessions(runCtx, d); return nil })
		m.goRun(func() error { m.serveTriggers(runCtx, d); return nil })
	}
	if notifier != nil {
		m.goRun(func() error { return notifier.Run(runCtx) })
	}
	return m, nil
}

// startCluster builds and starts this instance's cluster member (cluster
// mode only) and puts its stop on the root's teardown stack. The outcome
// consumer, the session service and the trigger subject run while it is
// the writer. It runs
// before the relay starts (the member fences a deposed writer's unsent
// changes first).
func (d *Daemon) startCluster(ctx context.Context, cfg *config.Config) error {
	if d.msg.lease == nil {
		return nil
	}
	name, err := d.root.Instance()
	if err != nil {
		return err
	}
	m, err := cluster.New(cluster.Options{Bus: d.msg.bus, Lease: d.msg.lease, Leadership: d.root.Leadership(),
		Store: d.store, Instance: name, DataDir: cfg.DataDir, Replicas: cfg.NATS.Stream.Replicas, Kick: d.msg.kick,
		Logger: d.log, Now: d.opts.Now, Registerer: d.opts.Registerer, StallAfter: cluster.StallBound(cmp.Or(cfg.NATS.Lease.TTL, bus.DefaultLeaseTTL)),
		HoldFor: cluster.HoldBound(cmp.Or(cfg.NATS.Lease.TTL, bus.DefaultLeaseTTL)), Republish: d.msg.relay.Retry, Resend: d.msg.relay.Resend, AnswerTimeout: cfg.HTTP.StreamAckTimeout})
	if err != nil {
		return err
	}
	d.cluster = m
	d.root.td.push("cluster", m.Stop)
	m.WhileWriter(func(ctx context.Context) { d.msg.consumeOutcomes(ctx, d) })
	m.WhileWriter(func(ctx context.Context) { d.msg.serveSessions(ctx, d) })
	m.WhileWriter(func(ctx context.Context) { d.msg.serveTriggers(ctx, d) })
	return m.Start(ctx)
}

// serveSessions answers standalone workers' session calls from this
// instance's store until ctx ends (they keep their sessions in the
// writer's store).
func (m *messaging) serveSessions(ctx context.Context, d *Daemon) {
	g := m.bus.Guard()
	refused := func(_, reason string) { g.Refused(contracts.StemSessions, reason) }
	var opts []sessions.Option
	if c := d.Config().Model.Budget.PerRunUSD; c > 0 {
		opts = append(opts, sessions.WithMaxCost(c))
	}
	if err := sessions.ServeAuthenticated(ctx, m.bus.Conn(), m.bus.Prefix(), d.store, d.log, g.Auth(), refused, opts...); err != nil && ctx.Err() == nil {
		d.log.Error("session service stopped", "err", err)
	}
}

// consumeOutcomes applies remediation outcomes until ctx ends: always on a
// single instance, on the writer only in cluster mode (cluster.Member).
func (m *messaging) consumeOutcomes(ctx context.Context, d *Daemon) {
	if err := m.transport.ConsumeOutcomes(ctx, m.outcomes, d.handleOutcome); err != nil && ctx.Err() == nil {
		d.log.Error("outcome consumer stopped", "err", err)
	}
}

// startNotify builds the notification sinks when they run inside serve
// (notify.in_serve) and ensures their consumers before anything is
// published; nil when there is nothing to run here.
func startNotify(ctx context.Context, cfg *config.Config, b *bus.Bus, d *Daemon) (*notify.Runner, error) {
	if !cfg.Notify.InServe || len(cfg.Notify.Sinks) == 0 {
		return nil, nil
	}
	r, err := notify.New(notify.RunnerOptions{Options: notifyOptions(cfg), JetStream: b.JetStream(), Prefix: b.Prefix(),
		Stream: b.StreamName(), Logger: d.log, Registerer: d.opts.Registerer, Now: d.opts.Now})
	if err != nil {
		return nil, err
	}
	return r, r.EnsureConsumers(ctx)
}

// startRelay starts publishing the outbox; call it once every consumer this
// process needs exists.
func (m *messaging) startRelay() {
	m.goRun(func() error { return m.relay.Run(m.runCtx) })
}

func (m *messaging) goRun(fn func() error) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		_ = fn()
	}()
}

// relayInterval is the relay's polling fallback (0: its default). Tests
// set it long to prove the commit wake.
var relayInterval time.Duration

func (m *messaging) kick() {
	if m != nil {
		m.relay.Kick()
	}
}

// stop flushes what is pending (bounded), releases the lease and closes
// the connection and the embedded server. NATS being unreachable is no
// failure of the stop: unsent events stay in the outbox (published at the
// next start) and an unreleased lease expires within its TTL, so both are
// logged and the stop succeeds.
func (m *messaging) stop() error {
	if m == nil {
		return nil
	}
	if nc := m.bus.Conn(); nc != nil && nc.IsConnected() {
		fctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		if err := m.relay.Flush(fctx); err != nil {
			m.log.Warn("outbox not flushed at stop; its events are published at the next start", "err", err)
		}
		cancel()
	} else {
		m.log.Warn("NATS unreachable at stop; pending events stay in the outbox and are published at the next start")
	}
	m.cancel()
	m.wg.Wait()
	if m.lease != nil {
		if err := m.lease.Close(); err != nil {
			m.log.Warn("leader lease not released; it expires within nats.lease.ttl", "err", err)
		}
	}
	return m.bus.Close()
}

// handleOutcome hands a remediation outcome from the bus to the findings'
// outcome handler.
func (d *Daemon) handleOutcome(ctx context.Context, o *contracts.RemediationOutcome) error {
	h := outcome.Handler{Recorder: outcome.Confirmed{Recorder: d.store, Check: d.conditionCheck()}, Now: d.opts.Now, Logger: d.log, Applied: d.msg.kick}
	return h.Handle(ctx, findings.Outcome{FindingID: o.FindingID, SessionID: o.SessionID,
		Attempt: o.Attempt, Outcome: string(o.Outcome), Summary: o.Summary, Epoch: o.Epoch})
}

// conditionCheck is the writer's own check a fix_verified outcome must
// pass: the current source and thresholds, re-collected now.
func (d *Daemon) conditionCheck() outcome.Check {
	return assistant.ConditionCheck(d.store.Get, func() snapshot.Source { return d.settings.Load().Source },
		func() signals.Thresholds { return d.settings.Load().Policy })
}

// findingDataRef points a finding event's dataref at the finding's web
// page under http.public_url; other events have none.
func findingDataRef(h api.HTTPConfig) func(contracts.OutboxEvent) string {
	return func(row contracts.OutboxEvent) string {
		if id, ok := contracts.FindingID(row); ok {
			return h.FindingURL(id)
		}
		return ""
	}
}
