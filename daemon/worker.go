package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// startWorker builds the assistant worker. With consume
// (assistant.enabled) it consumes remediation requests from the shared
// durable consumer and publishes outcomes; the daemon's outcome consumer
// applies them to the findings. Without, it only decides approvals
// through the API (those standalone workers asked for), and sessions are
// left to them.
func (d *Daemon) startWorker(ctx context.Context, cfg *config.Config, consume bool) error {
	if d.msg == nil {
		return fmt.Errorf("assistant.enabled needs NATS")
	}
	b := d.msg.bus
	o := assistantOptions(cfg, d.shared.provider)
	o.Store, o.Publisher, o.StoreRetry = d.store, outboxPublisher{d}, storeRetry(cfg)
	o.Source = func() snapshot.Source { return d.settings.Load().Source }
	o.Thresholds = func() signals.Thresholds { return d.settings.Load().Policy }
	o.Autonomy = func() findings.Autonomy { return findings.Autonomy(d.Config().Patrol.Autonomy) } // the reloaded one
	o.AgentMetrics, o.Neutraliser = d.shared.agentMetrics, d.shared.neutraliser
	o.Logger, o.Registerer, o.Now = d.log, d.opts.Registerer, d.opts.Now
	w, err := assistant.NewWorker(assistant.WorkerOptions{
		Options:   o,
		Transport: d.msg.transport, Stream: b.StreamName(),
		Subject:       contracts.FullSubject(b.Prefix(), contracts.SubjectRemediationRequests),
		MaxConcurrent: cfg.Investigation.MaxConcurrent, SweepInterval: assistant.DefaultSweepInterval,
	})
	if err != nil {
		return err
	}
	d.worker = w
	if !consume {
		return nil
	}
	if d.cluster != nil {
		// Cluster mode: only the writer takes remediation requests (its
		// database holds every finding they name).
		d.cluster.WhileWriter(func(ctx context.Context) {
			if err := w.Run(ctx); err != nil && ctx.Err() == nil {
				d.log.Error("assistant worker stopped", "err", err)
			}
		})
		return nil
	}
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := w.Run(wctx); err != nil && wctx.Err() == nil {
			d.log.Error("assistant worker stopped", "err", err)
		}
	}()
	d.root.td.push("assistant worker", func(context.Context) error { cancel(); wg.Wait(); return nil })
	return nil
}

// outboxPublisher sends the assistant's events (outcomes, approvals)
// through the outbox, like everything else patrold publishes: a NATS outage
// delays them, never loses them.
type outboxPublisher struct{ d *Daemon }

func (p outboxPublisher) Publish(ctx context.Context, row findings.OutboxEvent) error {
	if err := p.d.store.Enqueue(ctx, row); err != nil {
		return err
	}
	p.d.msg.kick()
	return nil
}

// storeRetry is how long a session's end waits for the session store
// (the writer's cluster/sessions service): two lease TTLs for a failover and the catch-up
// after it. Every worker and instance derives the request consumer's ack
// wait from it, so they agree on the consumer.
func storeRetry(cfg *config.Config) time.Duration {
	return 2*cfg.NATS.Lease.TTL + cluster.CatchUpTimeout
}
