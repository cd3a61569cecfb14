package deploy_test

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/daemon"
)

// panelMetric is a metric name in a panel's query: the daemon's own, Go's
// and the process's (recording rules, with a colon, are checked against
// prometheus-rules.yml by TestMetricNamesExist).
var panelMetric = regexp.MustCompile(`\b((?:patrold|go|process)_[a-z0-9_]*[a-z0-9])\b`)

// TestDashboardMetricsInTheRegistry: every metric a dashboard panel
// queries is registered by a running `serve` with an in-serve
// Alertmanager and webhook sink: the families its registry gathers, not
// string literals of the code.
func TestDashboardMetricsInTheRegistry(t *testing.T) {
	dir := t.TempDir()
	yaml := "data_dir: " + filepath.Join(dir, "var") + "\n" +
		"log: {level: error}\n" +
		"http: {listen: '127.0.0.1:0'}\n" +
		"nats: {embedded: {listen: '127.0.0.1:0'}}\n" +
		"schedule: {cron: '@every 1h', startup_delay: 1h}\n" +
		"assistant: {enabled: false}\n" +
		"notify:\n  in_serve: true\n  sinks:\n" +
		"    - {name: am, kind: alertmanager, alertmanager: {urls: ['http://127.0.0.1:1']}}\n" +
		"    - {name: hook, kind: webhook, webhook: {url: 'http://127.0.0.1:1/hook'}}\n"
	cfg, err := config.Load([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	rec := &describedNames{Registerer: reg, names: map[string]bool{}}
	d, err := daemon.New(daemon.Options{Config: cfg, Registerer: rec, Gatherer: reg, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		if err := d.Stop(sctx); err != nil {
			t.Error(err)
		}
	}()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	// A vector with no series yet is registered but not gathered: its
	// descriptor counts.
	rec.mu.Lock()
	registered := rec.names
	rec.mu.Unlock()
	for _, f := range fams {
		registered[f.GetName()] = true
	}

	var dash dashboard
	if err := json.Unmarshal([]byte(read(t, "grafana-dashboard.json")), &dash); err != nil {
		t.Fatal(err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, name := range panelMetric.FindAllString(tg.Expr, -1) {
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(name, suffix); ok && registered[b] {
						base = b
					}
				}
				if !registered[base] {
					t.Errorf("panel %d %q queries %s, which a running serve does not register", p.ID, p.Title, name)
				}
			}
		}
	}
	// The sinks, the API's latency and the bus each have a panel.
	for _, want := range []string{"patrold_notify_sent_total", "patrold_api_request_duration_seconds_bucket", "patrold_bus_connected"} {
		found := false
		for _, p := range dash.Panels {
			for _, tg := range p.Targets {
				found = found || strings.Contains(tg.Expr, want+"{")
			}
		}
		if !found {
			t.Errorf("no panel queries %s", want)
		}
	}
}

// describedNames records the name of every metric registered through it.
type describedNames struct {
	prometheus.Registerer
	mu    sync.Mutex
	names map[string]bool
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *describedNames) Register(c prometheus.Collector) error {
	if err := r.Registerer.Register(c); err != nil {
		return err
	}
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	r.mu.Lock()
	defer r.mu.Unlock()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
		}
	}
	return nil
}

func (r *describedNames) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}
