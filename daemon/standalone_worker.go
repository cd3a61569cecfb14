package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	sddaemon "github.com/coreos/go-systemd/v22/daemon"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/cluster/sessions"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// Worker runs a standalone assistant worker (`patrold worker`): a process
// with no database and no data_dir. It takes remediation requests from
// the shared durable consumer, beside the in-serve workers if any. It
// runs each session through the registry like an in-serve worker. It
// keeps its sessions, approvals and spend in the writer's store over NATS
// (cluster/sessions). It publishes outcomes straight to JetStream; the
// message id makes a republished outcome a duplicate. With no writer
// answering, a request is redelivered later; nothing is lost. It serves
// /metrics, /healthz and /readyz on listen when set; ready, when set,
// receives that address once the request consumer exists. Close stops
// what it started.
func (r *Root) Worker(ctx context.Context, listen string, ready func(addr string)) error {
	cfg := r.cfg
	bo, err := clientBusOptions(cfg, "worker", embedded.RoleWorker)
	if err != nil {
		return configErr(err)
	}
	name := "worker"
	if cfg.Cluster != nil && cfg.Cluster.Instance != "" {
		name = cfg.Cluster.Instance
	} else if h, err := os.Hostname(); err == nil {
		name = h
	}
	log := r.log.With("worker", name)
	registerRuntime(r.o.Registerer, log)
	pol, err := alerts.New(cfg.Alerts)
	if err != nil {
		return configErr(err)
	}
	src, err := buildSource(cfg, r.o.Now, sourceMetrics{reg: r.o.Registerer})
	if err != nil {
		return configErr(err)
	}
	sh, err := newShared(cfg, nil, r.o.Registerer)
	if err != nil {
		return configErr(err)
	}
	// Only serve manages the stream; the worker's user may not.
	b, err := r.newBus(bo, log, r.o.Registerer, false, bus.AttachStream())
	if err != nil {
		return configErr(err)
	}
	if err := b.Start(ctx); err != nil {
		return err
	}
	r.td.push("nats", func(context.Context) error { return b.Close() })
	tr, err := bus.NewTransport(bus.TransportOptions{JetStream: b.JetStream(), Prefix: b.Prefix(), Stream: b.StreamName(),
		Source: b.Source(), Logger: log, Registerer: r.o.Registerer, Guard: b.Guard()})
	if err != nil {
		return err
	}
	sessions, err := sessions.NewClient(b.Conn(), b.Prefix(), 0, log)
	if err != nil {
		return err
	}
	sessions = sessions.WithAuth(b.Guard().Auth())
	o := assistantOptions(cfg, sh.provider)
	o.Store, o.Publisher, o.StoreRetry = sessions, tr, storeRetry(cfg)
	o.Source, o.Thresholds = func() snapshot.Source { return src }, func() signals.Thresholds { return pol }
	o.AgentMetrics, o.Neutraliser = sh.agentMetrics, sh.neutraliser
	o.Logger, o.Registerer, o.Now = log, r.o.Registerer, r.o.Now
	w, err := assistant.NewWorker(assistant.WorkerOptions{
		Options: o, Transport: tr, Stream: b.StreamName(),
		Subject:       contracts.FullSubject(b.Prefix(), contracts.SubjectRemediationRequests),
		MaxConcurrent: cfg.Investigation.MaxConcurrent, SweepInterval: assistant.DefaultSweepInterval,
	})
	if err != nil {
		return configErr(err)
	}
	if err := tr.EnsureRequestConsumer(ctx, w.ConsumerOptions()); err != nil {
		return err
	}
	connected := func() error {
		if nc := b.Conn(); nc == nil || !nc.IsConnected() {
			return errors.New("NATS is not connected")
		}
		return nil
	}
	addr := ""
	if listen != "" {
		ln, err := net.Listen("tcp", listen)
		if err != nil {
			return configErr(fmt.Errorf("--listen: %w", err))
		}
		addr = ln.Addr().String()
		r.td.push("metrics http", serveHTTP(ln, r.healthMux(connected), log, "metrics server stopped", config.Default().HTTP))
	}
	log.Info("worker ready", "nats", b.ClientURL(), "listen", addr, "max_concurrent", cfg.Investigation.MaxConcurrent,
		"driver", w.Assistant().Driver())
	if ready != nil {
		ready(addr)
	}
	r.notifySystemd(sddaemon.SdNotifyReady)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var watchdog sync.WaitGroup
	watchdog.Add(1)
	go func() {
		defer watchdog.Done()
		r.watchdog(wctx, func(context.Context) error { return connected() })
	}()
	err = w.Run(wctx)
	cancel()
	watchdog.Wait()
	r.notifySystemd(sddaemon.SdNotifyStopping)
	log.Info("worker stopped")
	if ctx.Err() != nil {
		return nil
	}
	return err
}
