package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/notify"
)

// Notify runs the standalone notifier (`patrold notify`). It connects to
// NATS and runs every configured sink until ctx ends. It serves /metrics
// and /healthz on listen when set ("127.0.0.1:0" picks a port). ready,
// when set, receives the metrics address ("" without listen) once the
// sinks' consumers exist. What it starts is stopped by Close, last first.
func (r *Root) Notify(ctx context.Context, listen string, ready func(addr string)) error {
	cfg := r.cfg
	if len(cfg.Notify.Sinks) == 0 {
		return errors.New("notify.sinks: no sink is configured")
	}
	bo, err := clientBusOptions(cfg, "notify", embedded.RoleNotify)
	if err != nil {
		return err
	}
	// Only serve manages the stream; the notifier's user may not.
	b, err := r.newBus(bo, r.log, r.o.Registerer, false, bus.AttachStream())
	if err != nil {
		return err
	}
	if err := b.Start(ctx); err != nil {
		return err
	}
	r.td.push("nats", func(context.Context) error { return b.Close() })
	nr, err := notify.New(notify.RunnerOptions{Options: notifyOptions(cfg), JetStream: b.JetStream(), Prefix: b.Prefix(),
		Stream: b.StreamName(), Logger: r.log, Registerer: r.o.Registerer, Now: r.o.Now})
	if err != nil {
		return err
	}
	if err := nr.EnsureConsumers(ctx); err != nil {
		return err
	}
	addr := ""
	if listen != "" {
		ln, err := net.Listen("tcp", listen)
		if err != nil {
			return fmt.Errorf("--listen: %w", err)
		}
		addr = ln.Addr().String()
		r.td.push("metrics http", serveHTTP(ln, r.healthMux(nil), r.log, "metrics server stopped", config.Default().HTTP))
	}
	r.log.Info("patrold notify started", "sinks", nr.Sinks(), "nats", b.ClientURL(), "metrics", addr)
	if ready != nil {
		ready(addr)
	}
	err = nr.Run(ctx)
	r.log.Info("patrold notify stopped")
	return err
}

// healthMux serves /metrics, /healthz and, when ready is set, /readyz (503
// with the reason while ready returns an error) for the client processes.
func (r *Root) healthMux(ready func() error) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(r.o.Gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	if ready != nil {
		mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
			if err := ready(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = io.WriteString(w, "not ready: "+err.Error()+"\n")
				return
			}
			_, _ = io.WriteString(w, "ok\n")
		})
	}
	return mux
}

// notifyOptions is the notify section with every Alertmanager sink's
// link defaulted to the finding's web page under http.public_url.
func notifyOptions(cfg *config.Config) notify.Options {
	o := cfg.Notify
	o.Sinks = slices.Clone(o.Sinks)
	for i := range o.Sinks {
		if o.Sinks[i].Kind == notify.KindAlertmanager && o.Sinks[i].Alertmanager.Link == "" {
			o.Sinks[i].Alertmanager.Link = cfg.HTTP.BaseURL() + api.FindingPagePath + "{finding_id}"
		}
	}
	return o
}
