package daemon

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/patrold/patrold/cluster"
	"github.com/patrold/patrold/findings"
)

// Build information, set by cmd/patrold from its linker flags.
var (
	Version = "dev"
	Commit  = ""
)

// metrics are the daemon-level metrics: reloads, build info, and the
// findings gauge read from the store at scrape time.
type metrics struct {
	reloadOK   prometheus.Gauge
	reloadTime prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, d *Daemon) *metrics {
	m := &metrics{
		reloadOK: prometheus.NewGauge(prometheus.GaugeOpts{Name: "patrold_config_last_reload_successful",
			Help: "Whether the last configuration reload attempt succeeded (1) or failed (0)."}),
		reloadTime: prometheus.NewGauge(prometheus.GaugeOpts{Name: "patrold_config_last_reload_success_timestamp_seconds",
			Help: "Timestamp of the last successful configuration load."}),
	}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "patrold_build_info",
		Help: "Build information; always 1."}, []string{"version", "commit", "goversion"})
	build.WithLabelValues(Version, Commit, runtime.Version()).Set(1)
	reg.MustRegister(append([]prometheus.Collector{m.reloadOK, m.reloadTime, build, &findingsCollector{d: d}},
		cluster.LeadershipCollectors(d.root.Leadership())...)...)
	registerRuntime(reg, d.log)
	m.reloadOK.Set(1)
	m.reloadTime.Set(float64(d.opts.Now().Unix()))
	return m
}

func (m *metrics) reloaded(ok bool, at time.Time) {
	if ok {
		m.reloadOK.Set(1)
		m.reloadTime.Set(float64(at.Unix()))
		return
	}
	m.reloadOK.Set(0)
}

var (
	findingsDesc = prometheus.NewDesc("patrold_findings", "Findings by derived state and severity (every state except deleted history).",
		[]string{"state", "severity"}, nil)
	allStates = []string{findings.StateSuppressed, findings.StateResolved, findings.StateSnoozed, findings.StateDismissed,
		findings.StateInvestigating, findings.StateNeedsAttention, findings.StateRemediationPlanned, findings.StateRemediating,
		findings.StateRemediationFailed, findings.StateTimedOut, findings.StateDetected}
	allSeverities = []findings.Severity{findings.SeverityInfo, findings.SeverityWatch, findings.SeverityWarning, findings.SeverityCritical}
)

// findingsCollector counts findings by state and severity at scrape time,
// every combination present (zero when none).
type findingsCollector struct{ d *Daemon }

func (c *findingsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- findingsDesc }

func (c *findingsCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[[2]string]int{}
	if st := c.d.store; st != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if list, err := st.StateCounts(ctx, c.d.opts.Now()); err == nil {
			for _, sc := range list {
				counts[[2]string{sc.State, string(sc.Severity)}] += sc.Count
			}
		}
	}
	for _, s := range allStates {
		for _, sev := range allSeverities {
			ch <- prometheus.MustNewConstMetric(findingsDesc, prometheus.GaugeValue, float64(counts[[2]string{s, string(sev)}]), s, string(sev))
		}
	}
}

// registerRuntime registers the Go runtime (go_*) and process (process_*:
// RSS, CPU, open files) collectors and build info; a registry that has them
// already (the default one) keeps its own.
func registerRuntime(reg prometheus.Registerer, log *slog.Logger) {
	for _, c := range []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		var already prometheus.AlreadyRegisteredError
		if err := reg.Register(c); err != nil && !errors.As(err, &already) {
			log.Warn("runtime metrics not registered", "err", err)
		}
	}
}
