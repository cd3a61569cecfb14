package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/notify"
)

// NotifyOptions configure a standalone notifier (`patrold notify`).
type NotifyOptions struct {
	Config *config.Config
	// Listen serves /metrics and /healthz when set ("127.0.0.1:0" picks a port).
	Listen     string
	Stderr     io.Writer
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	Now        func() time.Time
	// Ready, when set, receives the metrics address ("" without Listen)
	// once the sinks' consumers exist.
	Ready func(addr string)
}

// NotifyBusOptions is the nats section for a process that is a client of
// another's server: with nats.url empty it connects to the embedded server
// of the local `patrold serve` (nats.embedded.listen) instead of starting one.
func NotifyBusOptions(cfg *config.Config) (bus.Options, error) {
	o := cfg.NATS
	if o.URL == "" {
		host, port, err := net.SplitHostPort(o.Embedded.Listen)
		if err != nil || port == "0" {
			return o, fmt.Errorf("nats.url: required for patrold notify when nats.embedded.listen (%q) names no fixed port", o.Embedded.Listen)
		}
		o.URL = "nats://" + net.JoinHostPort(host, port)
	}
	return o, nil
}

// RunNotify connects to NATS, runs every configured sink until ctx ends,
// and serves its metrics when asked to.
func RunNotify(ctx context.Context, o NotifyOptions) error {
	cfg := o.Config
	if cfg == nil {
		return errors.New("notify: Config is required")
	}
	if len(cfg.Notify.Sinks) == 0 {
		return errors.New("notify.sinks: no sink is configured")
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Registerer == nil {
		reg := prometheus.NewRegistry()
		o.Registerer, o.Gatherer = reg, reg
	}
	log := newLogger(cfg, o.Stderr)
	bo, err := NotifyBusOptions(cfg)
	if err != nil {
		return err
	}
	b, err := bus.New(bo, log, o.Registerer)
	if err != nil {
		return err
	}
	if err := b.Start(ctx); err != nil {
		return err
	}
	defer b.Close()
	r, err := notify.New(notify.RunnerOptions{Options: cfg.Notify, JetStream: b.JetStream(), Prefix: b.Prefix(),
		Stream: b.StreamName(), Logger: log, Registerer: o.Registerer, Now: o.Now})
	if err != nil {
		return err
	}
	if err := r.EnsureConsumers(ctx); err != nil {
		return err
	}
	addr := ""
	var wg sync.WaitGroup
	if o.Listen != "" {
		ln, err := net.Listen("tcp", o.Listen)
		if err != nil {
			return fmt.Errorf("--listen: %w", err)
		}
		addr = ln.Addr().String()
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{}))
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		wg.Add(1)
		go func() { defer wg.Done(); _ = srv.Serve(ln) }()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
			wg.Wait()
		}()
	}
	log.Info("patrold notify started", "sinks", r.Sinks(), "nats", b.ClientURL(), "metrics", addr)
	if o.Ready != nil {
		o.Ready(addr)
	}
	err = r.Run(ctx)
	log.Info("patrold notify stopped")
	return err
}
