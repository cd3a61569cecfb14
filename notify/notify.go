// Package notify delivers patrold's events to where operators already
// look: Alertmanager (one alert per finding, kept alive while the finding
// is active) and webhooks (the CloudEvents envelope, signed). Every sink is
// its own durable JetStream consumer on the events stream, so a sink that
// is down loses nothing and a sink on another host needs no database.
package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/contracts"
)

// RunnerOptions configure a Runner.
type RunnerOptions struct {
	Options    Options // the notify section
	JetStream  jetstream.JetStream
	Prefix     string // nats.subject_prefix
	Stream     string // nats.stream.name
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Now        func() time.Time
	// Client is the HTTP client of every sink (default: one with
	// http.DefaultTransport; each request has its sink's timeout).
	Client *http.Client
}

// Runner runs every configured sink.
type Runner struct {
	opts  RunnerOptions
	log   *slog.Logger
	sinks []*sinkRun
}

type sinkRun struct {
	cons *consumer
	am   *amSink // nil for a webhook
}

// New validates the options, reads the webhook secrets and builds the
// sinks; nothing runs until Run.
func New(o RunnerOptions) (*Runner, error) {
	if o.JetStream == nil {
		return nil, errors.New("notify: JetStream is required")
	}
	if o.Stream == "" {
		o.Stream = contracts.DefaultStreamName
	}
	if err := o.Options.Validate(o.Prefix); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Client == nil {
		o.Client = &http.Client{Transport: http.DefaultTransport}
	}
	m, err := newMetrics(o.Registerer, o.Options.Sinks)
	if err != nil {
		return nil, err
	}
	r := &Runner{opts: o, log: o.Logger.With("component", "notify")}
	for i, s := range o.Options.Sinks {
		s = s.withDefaults()
		log := r.log.With("sink", s.Name, "kind", s.Kind)
		c := &consumer{js: o.JetStream, stream: o.Stream, sink: s, m: m, log: log}
		run := &sinkRun{cons: c}
		switch s.Kind {
		case KindAlertmanager:
			run.am = newAMSink(s, o.Client, m, log, o.Now)
			c.filters = sinkFilters(s, o.Prefix)
			// every Alertmanager is posted in parallel, each within the timeout
			c.ackWait = s.Alertmanager.Timeout + 2*ackWaitMargin
			c.deliver = run.am.deliver
		case KindWebhook:
			w := &webhookSink{opts: s, client: o.Client}
			if s.Webhook.SecretFile != "" {
				raw, err := os.ReadFile(s.Webhook.SecretFile)
				if err != nil {
					return nil, fmt.Errorf("notify.sinks[%d].webhook.secret_file: %w", i, err)
				}
				if w.secret = []byte(strings.TrimSpace(string(raw))); len(w.secret) == 0 {
					return nil, fmt.Errorf("notify.sinks[%d].webhook.secret_file: %s is empty", i, s.Webhook.SecretFile)
				}
			}
			c.filters = sinkFilters(s, o.Prefix)
			c.ackWait = s.Webhook.Timeout + 2*ackWaitMargin
			c.deliver = w.deliver
		}
		r.sinks = append(r.sinks, run)
	}
	return r, nil
}

func findingsFilter(prefix string) string {
	return contracts.FullSubject(prefix, contracts.SubjectFindingsAll)
}

// Sinks reports how many sinks are configured.
func (r *Runner) Sinks() int { return len(r.sinks) }

// EnsureConsumers creates (or updates) every sink's durable consumer now.
// A new durable starts with events published after it was created, so a
// process must ensure the consumers before it publishes events meant for
// them.
func (r *Runner) EnsureConsumers(ctx context.Context) error {
	for _, s := range r.sinks {
		if _, err := s.cons.ensure(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Run runs every sink until ctx ends. An alertmanager sink first rebuilds
// its active alerts from the stream and posts them, then delivers new
// events and re-posts the active ones every resend_interval.
func (r *Runner) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, len(r.sinks))
	for i, s := range r.sinks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.runSink(ctx, s)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (r *Runner) runSink(ctx context.Context, s *sinkRun) error {
	if s.am != nil {
		for {
			n, err := s.am.replay(ctx, r.opts.JetStream, r.opts.Stream, s.cons.filters[0])
			if err == nil {
				s.cons.log.Info("active alerts rebuilt from the stream", "events", n, "active", len(s.am.active()))
				break
			}
			if ctx.Err() != nil {
				return nil
			}
			s.cons.log.Warn("replay failed; retrying", "err", err)
			sleep(ctx, pullErrorPause)
		}
		s.am.resend(ctx)
		done := make(chan struct{})
		go func() { defer close(done); s.am.resendLoop(ctx) }()
		defer func() { <-done }()
	}
	return s.cons.run(ctx)
}
