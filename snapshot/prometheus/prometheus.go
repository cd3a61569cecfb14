// Package prometheus is the snapshot source that builds the fleet from a
// Prometheus server: nodes and storage from node_exporter, disks from
// smartctl_exporter, backup freshness from a backup exporter. Every field is
// one configurable PromQL instant query; queries run concurrently.
//
// One failed query does not fail the collection: the resources of its
// family are left out and the failure is returned as a snapshot.Problem
// whose field is "query.<name>" (see QueryFailure), which makes the run
// degraded. Only when every query fails is Collect an error.
package prometheus

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	promclient "github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/snapshot"
)

// Defaults for Options.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultWindow      = 15 * time.Minute
	DefaultRateWindow  = time.Minute
	DefaultConcurrency = 4
	// DefaultSourceName is the snapshot's source field.
	DefaultSourceName = "prometheus"
)

// Labels name the series labels that identify resources (YAML section
// source.prometheus.labels). Empty means the default.
type Labels struct {
	// Node names the node; when a series lacks it the host part of the
	// instance label is used. Default "node".
	Node string `koanf:"node" yaml:"node" json:"node"`
	// Mountpoint names a storage pool (falls back to Device). Default "mountpoint".
	Mountpoint string `koanf:"mountpoint" yaml:"mountpoint" json:"mountpoint"`
	// Device names a disk or a storage device. Default "device".
	Device string `koanf:"device" yaml:"device" json:"device"`
	// Guest names the guest on backup series: a resource id such as
	// "vm/101", or a bare name that becomes "<guest_kind>/<name>". Default "guest".
	Guest string `koanf:"guest" yaml:"guest" json:"guest"`
	// GuestKind holds "vm" or "container" on backup series; absent means vm.
	// Default "guest_kind".
	GuestKind string `koanf:"guest_kind" yaml:"guest_kind" json:"guest_kind"`
	// BackupStatus holds ok|failed|running|warning|unknown on the last-status
	// series. Default "status".
	BackupStatus string `koanf:"backup_status" yaml:"backup_status" json:"backup_status"`
}

// DefaultLabels returns the label names the default queries produce.
func DefaultLabels() Labels {
	return Labels{Node: "node", Mountpoint: "mountpoint", Device: "device",
		Guest: "guest", GuestKind: "guest_kind", BackupStatus: "status"}
}

// Options configure the Prometheus source (YAML section source.prometheus).
type Options struct {
	URL string `koanf:"url" yaml:"url" json:"url"`
	// Timeout bounds one whole collection. Zero means DefaultTimeout.
	Timeout time.Duration `koanf:"timeout" yaml:"timeout" json:"timeout"`
	// Window is the span of the _avg values ($window). Zero means DefaultWindow.
	Window time.Duration `koanf:"window" yaml:"window" json:"window"`
	// RateWindow is the rate() span of current values ($rate_window); at
	// least four scrape intervals. Zero means DefaultRateWindow.
	RateWindow time.Duration `koanf:"rate_window" yaml:"rate_window" json:"rate_window"`
	// BearerTokenFile, when set, is read on every request and sent as
	// "Authorization: Bearer <token>".
	BearerTokenFile string `koanf:"bearer_token_file" yaml:"bearer_token_file" json:"bearer_token_file"`
	// Concurrency bounds the queries in flight. Zero means DefaultConcurrency.
	Concurrency int     `koanf:"concurrency" yaml:"concurrency" json:"concurrency"`
	Queries     Queries `koanf:"queries" yaml:"queries" json:"queries"`
	Labels      Labels  `koanf:"labels" yaml:"labels" json:"labels"`

	// Registerer receives the source's metrics; nil disables them.
	Registerer promclient.Registerer `koanf:"-" yaml:"-" json:"-"`
	// Metrics, when set, are used instead of registering new ones on
	// Registerer (a source rebuilt on reload).
	Metrics *Metrics `koanf:"-" yaml:"-" json:"-"`
}

// Validate reports every problem, each naming its key under source.prometheus.
func (o Options) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("source.prometheus.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if o.URL == "" {
		add("url", "required (e.g. http://127.0.0.1:9090)")
	} else if u, err := url.Parse(o.URL); err != nil {
		add("url", "not a URL: %v", err)
	} else if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		add("url", "want http(s)://host:port, got %q", o.URL)
	}
	for key, d := range map[string]time.Duration{"timeout": o.Timeout, "window": o.Window, "rate_window": o.RateWindow} {
		if d < 0 {
			add(key, "must not be negative, got %s", d)
		} else if d%time.Millisecond != 0 {
			add(key, "must be whole milliseconds, got %s", d)
		}
	}
	if o.Concurrency < 0 {
		add("concurrency", "must not be negative, got %d", o.Concurrency)
	}
	enabled := 0
	for _, s := range specs {
		if q := strings.TrimSpace(*s.get(&o.Queries)); q != QueryOff {
			enabled++
		}
	}
	if enabled == 0 {
		add("queries", "every query is %q; nothing would be collected", QueryOff)
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	if o.RateWindow == 0 {
		o.RateWindow = DefaultRateWindow
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	o.Queries = o.Queries.withDefaults()
	def := DefaultLabels()
	for _, p := range []struct {
		v *string
		d string
	}{
		{&o.Labels.Node, def.Node}, {&o.Labels.Mountpoint, def.Mountpoint}, {&o.Labels.Device, def.Device},
		{&o.Labels.Guest, def.Guest}, {&o.Labels.GuestKind, def.GuestKind}, {&o.Labels.BackupStatus, def.BackupStatus},
	} {
		if *p.v == "" {
			*p.v = p.d
		}
	}
	return o
}

// Source collects snapshots from one Prometheus server. It is safe for
// concurrent use.
type Source struct {
	opts    Options
	api     v1.API
	metrics *metrics
}

var _ snapshot.Source = (*Source)(nil)

// New validates opts and builds the client. It does not contact the server.
func New(opts Options) (*Source, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	var rt http.RoundTripper = http.DefaultTransport.(*http.Transport).Clone()
	if opts.BearerTokenFile != "" {
		if _, err := readToken(opts.BearerTokenFile); err != nil {
			return nil, fmt.Errorf("source.prometheus.bearer_token_file: %w", err)
		}
		rt = &bearerTransport{file: opts.BearerTokenFile, next: rt}
	}
	client, err := promapi.NewClient(promapi.Config{Address: opts.URL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("source.prometheus.url: %w", err)
	}
	m, err := opts.metrics()
	if err != nil {
		return nil, err
	}
	return &Source{opts: opts, api: v1.NewAPI(client), metrics: m}, nil
}

// bearerTransport adds the token read from a file to every request, so a
// rotated token is picked up without a reload.
type bearerTransport struct {
	file string
	next http.RoundTripper
}

func (t *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	token, err := readToken(t.file)
	if err != nil {
		return nil, fmt.Errorf("bearer_token_file: %w", err)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+token)
	return t.next.RoundTrip(req)
}

func readToken(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(raw))
	if token == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return token, nil
}

func (o Options) metrics() (*metrics, error) {
	if o.Metrics != nil {
		return o.Metrics.m, nil
	}
	return newMetrics(o.Registerer)
}

// DefaultOptions is the source.prometheus section's defaults.
func DefaultOptions() Options {
	return Options{Timeout: DefaultTimeout, Window: DefaultWindow, RateWindow: DefaultRateWindow, Concurrency: DefaultConcurrency}
}
