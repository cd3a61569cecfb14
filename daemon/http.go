package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/patrol/analyst"
	"github.com/patrold/patrold/snapshot/sources"
	"github.com/patrold/patrold/store"
)

// ErrStopping refuses new runs while the daemon shuts down.
var ErrStopping = errors.New("daemon is stopping")

var _ api.Daemon = (*Daemon)(nil)

// startHTTP builds the API and starts serving it on http.listen.
func (d *Daemon) startHTTP() error {
	cfg := d.Config()
	tokens, err := api.TokensFromConfig(tokenSpecs(cfg))
	if err != nil {
		return err
	}
	opts := api.Options{
		Store: d.store, Daemon: d, Tokens: tokens, Gatherer: d.opts.Gatherer, Registerer: d.opts.Registerer,
		Logger: d.log, Now: d.opts.Now, MaxBodyBytes: cfg.HTTP.MaxBodyBytes, Capabilities: d.capabilities,
		Pprof: cfg.HTTP.Pprof, Triggers: d, AlertLabels: cfg.Patrol.Triggers.AlertLabels,
	}
	if d.worker != nil {
		opts.Approvals = d.worker.Assistant()
	}
	a, err := api.New(opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.HTTP.Listen)
	if err != nil {
		return fmt.Errorf("http.listen: %w", err)
	}
	d.httpAddr = ln.Addr().String()
	d.log.Info("api listening", "addr", d.httpAddr)
	h := d.guardStore(a.Handler())
	if d.cluster != nil {
		// Cluster mode: the writer answers a mutation once its change is
		// on the stream; a standby forwards mutations to the writer.
		if h, err = api.DurableAnswers(h, api.DurableOptions{Track: trackCommits, Wait: d.msg.relay.WaitStored,
			Writer: d.root.Leadership().IsWriter, Timeout: cfg.HTTP.StreamAckTimeout, Logger: d.log, Registerer: d.opts.Registerer}); err != nil {
			_ = ln.Close()
			return err
		}
		h = d.cluster.Forwarding(h)
	}
	// The body limit is outermost: it holds before auth and before a
	// standby reads a body to forward it.
	h = api.LimitBodies(h, cfg.HTTP.MaxBodyBytes)
	d.root.td.push("api", serveHTTP(ln, h, d.log, "http server stopped", cfg.HTTP))
	return nil
}

// serveHTTP serves h on ln until the returned stop shuts it down (each
// request finishing within 5s). Reading a request's header is bounded by
// hc.ReadHeaderTimeout and reading all of it by hc.ReadTimeout: a slower
// client has its connection closed.
func serveHTTP(ln net.Listener, h http.Handler, log *slog.Logger, failed string, hc api.HTTPConfig) func(context.Context) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: hc.ReadHeaderTimeout, ReadTimeout: hc.ReadTimeout, IdleTimeout: 2 * time.Minute}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(failed, "err", err)
		}
	}()
	return func(context.Context) error {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := srv.Shutdown(sctx)
		wg.Wait()
		return err
	}
}

// trackCommits notes the outbox rows the store commits under ctx.
func trackCommits(ctx context.Context) (context.Context, func() int64) {
	ctx, mark := store.TrackCommits(ctx)
	return ctx, mark.Seq
}

// HTTPAddr is the address the API listens on (after Start).
func (d *Daemon) HTTPAddr() string { return d.httpAddr }

func (d *Daemon) capabilities() api.Capabilities {
	var profiles []agent.Capabilities
	if stages, err := analyst.Capabilities(); err == nil {
		profiles = append(profiles, stages...)
	}
	if d.worker != nil {
		if rem, err := d.worker.Assistant().Capabilities(); err == nil {
			profiles = append(profiles, rem)
		}
	}
	return api.NewCapabilities(profiles...)
}

// TriggerRun admits a run now and returns its id; the run outlives the
// request. While a run is in progress it returns *patrol.BusyError.
func (d *Daemon) TriggerRun(ctx context.Context) (string, error) {
	return d.startRun(patrol.TriggerAPI, patrol.RunOptions{})
}

// TriggerScopedRun admits a scoped run over resources now (as
// TriggerRun).
func (d *Daemon) TriggerScopedRun(ctx context.Context, resources []string, reason string) (string, error) {
	return d.startRun(patrol.TriggerAPI, patrol.RunOptions{Scope: resources, Reason: reason})
}

// TriggerFromHook asks for a scoped run over resources for an outside
// monitor's alert, under the trigger limits (patrol.Triggers).
func (d *Daemon) TriggerFromHook(ctx context.Context, resources []string, reason string) (api.HookResult, error) {
	out, id, err := d.triggers.Request(resources, reason)
	return api.HookResult{Outcome: string(out), RunID: id, Resources: resources}, err
}

// startRun admits a run under the daemon's lifetime context.
func (d *Daemon) startRun(trigger patrol.Trigger, ro patrol.RunOptions) (string, error) {
	if err := d.storeWritable(); err != nil {
		d.dbLost(err)
		return "", err
	}
	d.mu.Lock()
	if d.stopped || d.runCtx == nil {
		d.mu.Unlock()
		return "", ErrStopping
	}
	ctx := d.runCtx
	d.wg.Add(1)
	d.mu.Unlock()
	id, err := d.runner.Start(ctx, trigger, ro, func(rep *patrol.Report, err error) {
		defer d.wg.Done()
		if err != nil {
			d.log.Error("run failed", "trigger", trigger, "err", err)
		}
		// Triggers that arrived during this run run now, as one.
		if id, err := d.triggers.RunEnded(); err != nil {
			d.log.Warn("coalesced triggers not started", "err", err)
		} else if id != "" {
			d.log.Info("coalesced triggers started a scoped run", "run_id", id)
		}
	})
	if err != nil {
		d.wg.Done()
	}
	return id, err
}

// Status reports what the daemon is doing.
func (d *Daemon) Status(ctx context.Context) (api.Status, error) {
	cfg := d.Config()
	lead := d.root.Leadership()
	s := api.Status{Version: Version, StartedAt: d.startedAt, CurrentRunID: d.runner.Current(), Leader: lead.HoldsLease(),
		Role: string(lead.Role()), NATSURL: d.NATSURL(), Source: sources.Describe(cfg.Source, cfg.Sources), Schedule: cfg.Schedule.Cron, Autonomy: cfg.Patrol.Autonomy}
	if lead.Clustered() {
		since := lead.Since().UTC()
		s.LeaderSince = &since
		s.Instance, _ = d.root.Instance()
		if d.cluster != nil {
			s.Replica = &api.ReplicaStatus{Writer: lead.IsWriter()}
			if l := d.cluster.Lag(ctx); l != nil {
				s.Replica.AppliedSeq, s.Replica.LastSeq, s.Replica.Behind, s.Replica.AppliedAt = l.AppliedSeq, l.LastSeq, l.Behind, l.AppliedAt
				s.Replica.Epoch, s.Replica.Fenced, s.Replica.Gap, s.Replica.Diverged = l.Epoch, l.Fenced, l.Gap, l.Diverged
				s.Replica.ApplyError = l.ApplyError
			}
		}
	}
	s.LastSuccessAt = d.lastSuccess(ctx)
	s.Unready = d.unready(ctx)
	s.Ready = len(s.Unready) == 0
	if s.Unready == nil {
		s.Unready = []api.ReadyProblem{}
	}
	if runs, err := d.store.Runs(ctx, 1); err == nil && len(runs) > 0 {
		s.LastRunID, s.LastRunStatus, s.LastRunAt = runs[0].ID, runs[0].Status, runs[0].FinishedAt
	}
	s.OutboxPending, _ = d.store.PendingCount(ctx)
	if active, err := d.store.ActiveKeys(ctx); err == nil {
		s.ActiveCount = len(active)
	}
	return s, nil
}

// Ready reports whether the store answers and the daemon is not stopping.
func (d *Daemon) Ready(ctx context.Context) error {
	d.mu.Lock()
	stopped := d.stopped
	d.mu.Unlock()
	if stopped {
		return ErrStopping
	}
	return readyError(d.unready(ctx))
}

// lastSuccess is when the last run not ending in error finished (nil:
// none, or the store did not answer).
func (d *Daemon) lastSuccess(ctx context.Context) *time.Time {
	last, err := d.store.LastSuccessfulRun(ctx)
	if err != nil || last == nil {
		return nil
	}
	t := last.UTC()
	return &t
}

// ReadyDetail is what /readyz shows besides "ready": role, leadership and
// the last successful run.
func (d *Daemon) ReadyDetail(ctx context.Context) api.Readiness {
	lead := d.root.Leadership()
	leader := lead.HoldsLease()
	return api.Readiness{Role: string(lead.Role()), Leader: &leader, LastSuccessAt: d.lastSuccess(ctx)}
}
