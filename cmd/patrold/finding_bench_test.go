package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/internal/testkit"
)

// findingSamples is how many alerts one benchmark invocation times: enough
// for a p99 that is not the maximum of a handful.
const findingSamples = 100

// arrivals records, per resource, when something about it first arrived.
type arrivals struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (a *arrivals) mark(resource string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.at[resource]; !ok {
		a.at[resource] = time.Now()
	}
}

func (a *arrivals) get(resource string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.at[resource]
	return t, ok
}

// openedSubject reads the resource of a finding-opened CloudEvent.
func openedSubject(body []byte) string {
	var env struct {
		Type    string `json:"type"`
		Subject string `json:"subject"`
	}
	if json.Unmarshal(body, &env) != nil || env.Type != "patrold.finding.opened" {
		return ""
	}
	return env.Subject
}

func benchAddr(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// BenchmarkAlertToFinding: a real Alertmanager fires an alert naming one
// node at patrold's hook; patrold runs a scoped run over it, and the
// finding's opened event reaches the stream and a webhook sink. Each of
// findingSamples alerts names a new node with high CPU, so each opens a
// finding. Timed from the webhook reaching the hook (a proxy in front of
// it notes the time) to the later of the two arrivals.
func BenchmarkAlertToFinding(b *testing.B) {
	bin := ""
	for _, name := range []string{"prometheus-alertmanager", "alertmanager"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		b.Skip("prometheus-alertmanager not on PATH")
	}
	dir := b.TempDir()

	// A fleet of nodes, each above the CPU threshold.
	type res struct {
		ID      string             `json:"id"`
		Kind    string             `json:"kind"`
		Name    string             `json:"name"`
		Status  string             `json:"status"`
		Metrics map[string]float64 `json:"metrics"`
	}
	nodes := make([]res, findingSamples)
	for i := range nodes {
		name := fmt.Sprintf("pve%03d", i)
		nodes[i] = res{ID: "node/" + name, Kind: "node", Name: name, Status: "online",
			Metrics: map[string]float64{"cpu_percent": 93, "cpu_percent_avg": 88, "memory_percent": 40, "window_seconds": 900}}
	}
	snapDoc, _ := json.Marshal(map[string]any{"version": 1, "taken_at": time.Now().UTC().Format(time.RFC3339), "source": "bench", "resources": nodes})
	snap := filepath.Join(dir, "snapshot.json")
	token := filepath.Join(dir, "am.token")
	for path, data := range map[string][]byte{snap: snapDoc, token: []byte("bench-trigger-token\n")} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			b.Fatal(err)
		}
	}

	// The stream: an outside NATS server patrold publishes to.
	opts, err := embedded.ServerOptions("127.0.0.1:0", filepath.Join(dir, "nats"))
	if err != nil {
		b.Fatal(err)
	}
	ns, err := embedded.StartServer(opts, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	onStream := &arrivals{at: map[string]time.Time{}}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	if _, err := nc.Subscribe("patrol.findings.opened.>", func(m *nats.Msg) {
		if id := openedSubject(m.Data); id != "" {
			onStream.mark(id)
		}
	}); err != nil {
		b.Fatal(err)
	}
	// The sink: a webhook receiver.
	onSink := &arrivals{at: map[string]time.Time{}}
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if id := openedSubject(body); id != "" {
			onSink.mark(id)
		}
	}))
	b.Cleanup(sink.Close)

	cfgPath := filepath.Join(dir, "patrold.yaml")
	cfgDoc := "data_dir: " + filepath.Join(dir, "var") + "\n" +
		"http: {listen: '" + benchAddr(b) + "', tokens: [{name: alertmanager, token_file: " + token + ", scope: trigger}]}\n" +
		"nats: {url: '" + ns.ClientURL() + "'}\nlog: {level: warn}\n" +
		"schedule: {startup_delay: 1h}\nsource: {kind: file, file: {path: " + snap + "}}\n" +
		"patrol: {triggers: {per_resource: 1ms, global: 1ms}}\n" +
		"notify:\n  sinks:\n    - {name: hook, kind: webhook, backoff: 200ms, max_backoff: 1s, webhook: {url: '" + sink.URL + "'}}\n"
	if err := os.WriteFile(cfgPath, []byte(cfgDoc), 0o600); err != nil {
		b.Fatal(err)
	}
	cfg, err := (&app{configPath: cfgPath}).loadConfig()
	if err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	d, err := daemon.New(daemon.Options{Config: cfg, Registerer: reg, Gatherer: reg, Stderr: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Stop(context.Background()) })

	// The hook, behind a proxy that notes when each alert reaches it.
	atHook := &arrivals{at: map[string]time.Time{}}
	target, _ := url.Parse("http://" + d.HTTPAddr())
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		body, _ := io.ReadAll(r.Body)
		var p struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
			} `json:"alerts"`
		}
		_ = json.Unmarshal(body, &p)
		atHook.mu.Lock()
		for _, a := range p.Alerts {
			if id := a.Labels["resource_id"]; id != "" {
				if _, ok := atHook.at[id]; !ok {
					atHook.at[id] = now
				}
			}
		}
		atHook.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	b.Cleanup(front.Close)

	// A real Alertmanager: one group an alert, sent at once.
	amDir := b.TempDir()
	amAddr := benchAddr(b)
	amCfg := "route:\n  receiver: patrold\n  group_by: ['...']\n  group_wait: 0s\n  group_interval: 1m\n  repeat_interval: 4h\n" +
		"receivers:\n  - name: patrold\n    webhook_configs:\n      - url: " + front.URL + "/api/v1/hooks/alertmanager\n" +
		"        send_resolved: false\n        http_config:\n          authorization:\n            type: Bearer\n" +
		"            credentials_file: " + token + "\n"
	if err := os.WriteFile(filepath.Join(amDir, "alertmanager.yml"), []byte(amCfg), 0o600); err != nil {
		b.Fatal(err)
	}
	amLog := &testkit.LogBuffer{}
	am := exec.Command(bin, "--config.file="+filepath.Join(amDir, "alertmanager.yml"), "--storage.path="+filepath.Join(amDir, "data"),
		"--web.listen-address="+amAddr, "--cluster.listen-address=", "--log.level=warn")
	am.Stdout, am.Stderr = amLog, amLog
	if err := am.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = am.Process.Signal(syscall.SIGTERM); _ = am.Wait() })
	testkit.EventuallyState(b, 20*time.Second, "alertmanager ready", func() (bool, string) {
		resp, err := http.Get("http://" + amAddr + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, amLog.String()
	})

	var lat, amLat []time.Duration
	b.ResetTimer()
	for i := range findingSamples {
		id := nodes[i].ID
		sent := time.Now()
		alert := fmt.Sprintf(`[{"labels": {"alertname": "HostCPU", "resource_id": %q, "severity": "warning"}}]`, id)
		resp, err := http.Post("http://"+amAddr+"/api/v2/alerts", "application/json", bytes.NewBufferString(alert))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("post alert: %s", resp.Status)
		}
		var hook, stream, posted time.Time
		testkit.EventuallyState(b, 30*time.Second, "the finding of "+id+" on the stream and at the sink", func() (bool, string) {
			var ok1, ok2, ok3 bool
			hook, ok1 = atHook.get(id)
			stream, ok2 = onStream.get(id)
			posted, ok3 = onSink.get(id)
			return ok1 && ok2 && ok3, fmt.Sprintf("hook %v stream %v sink %v\n%s", ok1, ok2, ok3, amLog.String())
		})
		last := stream
		if posted.After(last) {
			last = posted
		}
		lat = append(lat, last.Sub(hook))
		amLat = append(amLat, hook.Sub(sent))
	}
	b.StopTimer()
	// pct is the nearest-rank percentile in milliseconds.
	pct := func(ds []time.Duration, p float64) float64 {
		ds = slices.Sorted(slices.Values(ds))
		rank := int(math.Ceil(p*float64(len(ds)))) - 1
		return float64(ds[max(rank, 0)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(lat, 0.50), "p50-ms")
	b.ReportMetric(pct(lat, 0.99), "p99-ms")
	b.ReportMetric(pct(lat, 1), "max-ms")
	// Alertmanager's own part, from the alert posted to the hook: not in
	// the goal, shown so the whole path is known.
	b.ReportMetric(pct(amLat, 0.50), "am-p50-ms")
	b.ReportMetric(0, "ns/op")
}
