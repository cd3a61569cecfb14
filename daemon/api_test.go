package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/patrol"
)

// slowConfig uses an exec source that takes delay before printing the
// snapshot, and an admin and a read token.
func slowConfig(t *testing.T, dir string, delay string) (*config.Config, string) {
	t.Helper()
	useSnapshot(t, dir, "faults.json")
	script := filepath.Join(dir, "collect.sh")
	body := "#!/bin/sh\nsleep " + delay + "\nexec /bin/cat " + filepath.Join(dir, "snapshot.json") + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	yaml := "data_dir: " + dir + "\nlog: {level: warn}\n" +
		"http: {listen: '127.0.0.1:0', tokens: [{name: ops, token: admin-secret-0001, scope: admin}, {name: dash, token: read-secret-00001, scope: read}]}\n" +
		"nats: {embedded: {listen: '127.0.0.1:0'}}\n" +
		"schedule: {cron: '@every 1h', startup_delay: 1h}\n" +
		"source: {kind: exec, exec: {command: [" + script + "], timeout: 1m}}\n"
	path := filepath.Join(dir, "patrold.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, path
}

func call(t *testing.T, method, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	data, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(data, &out)
	return res.StatusCode, out
}

func TestTriggerBusyAndGracefulStop(t *testing.T) {
	dir := t.TempDir()
	cfg, path := slowConfig(t, dir, "2")
	reg := prometheus.NewRegistry()
	d, err := daemon.New(daemon.Options{Config: cfg, ConfigPath: path, Registerer: reg, Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	base := "http://" + d.HTTPAddr()
	if code, _ := call(t, "POST", base+"/api/v1/runs", "", ""); code != 401 {
		t.Fatalf("trigger without token: %d", code)
	}
	if code, _ := call(t, "POST", base+"/api/v1/runs", "read-secret-00001", ""); code != 403 {
		t.Fatalf("trigger with read token: %d", code)
	}
	code, body := call(t, "POST", base+"/api/v1/runs", "admin-secret-0001", "")
	if code != 202 || body["run_id"] == "" {
		t.Fatalf("trigger: %d %v", code, body)
	}
	runID := body["run_id"].(string)
	code, body = call(t, "POST", base+"/api/v1/runs", "admin-secret-0001", "")
	if code != 409 || body["error"] != "patrol_already_running" || body["current_run_id"] != runID {
		t.Fatalf("busy trigger: %d %v", code, body)
	}
	// SIGTERM during the run: a drain timeout shorter than the run cancels
	// it; the database is consistent (the run is an error, nothing half
	// written, nothing left "running").
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	root, st := openRoot(t, cfg)
	defer root.Close()
	run, err := st.Run(context.Background(), runID)
	if err != nil || run.Status != patrol.StatusError {
		t.Fatalf("cancelled run: %+v %v", run, err)
	}
	if n, _ := st.Count(context.Background()); n != 0 {
		t.Fatalf("a cancelled run wrote %d findings", n)
	}
	if n, _ := st.MarkInterrupted(context.Background(), time.Now()); n != 0 {
		t.Fatalf("%d runs left running", n)
	}
}

func TestReloadKeepsOldConfigOnError(t *testing.T) {
	dir := t.TempDir()
	cfg, path := slowConfig(t, dir, "0")
	reg := prometheus.NewRegistry()
	d, err := daemon.New(daemon.Options{Config: cfg, ConfigPath: path, Registerer: reg, Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer d.Stop(context.Background())
	base := "http://" + d.HTTPAddr()
	good, _ := os.ReadFile(path)
	os.WriteFile(path, append(good, []byte("schedule: {cron: 'not a schedule'}\n")...), 0o600)
	if code, body := call(t, "POST", base+"/-/reload", "admin-secret-0001", ""); code == 200 {
		t.Fatalf("bad reload accepted: %v", body)
	}
	if d.Config().Schedule.Cron != "@every 1h" {
		t.Fatal("bad reload replaced the config")
	}
	if v := gauge(t, reg, "patrold_config_last_reload_successful"); v != 0 {
		t.Fatalf("reload gauge %v", v)
	}
	// A good reload applies new thresholds without restart.
	os.WriteFile(path, append(good, []byte("alerts: {defaults: {storage: {usage: {trigger: 97, critical: 99}}}}\n")...), 0o600)
	if code, body := call(t, "POST", base+"/-/reload", "admin-secret-0001", ""); code != 200 {
		t.Fatalf("good reload: %d %v", code, body)
	}
	if v := gauge(t, reg, "patrold_config_last_reload_successful"); v != 1 {
		t.Fatalf("reload gauge %v", v)
	}
	rep, err := d.RunNow(context.Background(), patrol.TriggerManual)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Signals {
		if s.Type == "high_disk" && s.ResourceID == "storage/pve2/backup" {
			t.Fatalf("reloaded threshold 97 not applied: %+v", s)
		}
	}
}

func gauge(t *testing.T, g prometheus.Gatherer, name string) float64 {
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

// TestMetricsPassPromtool runs `promtool check metrics` on /metrics.
func TestMetricsPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is required in CI (Debian package prometheus)")
		}
		t.Skip("promtool not installed")
	}
	dir := t.TempDir()
	cfg, path := slowConfig(t, dir, "0")
	reg := prometheus.NewRegistry()
	d, _ := daemon.New(daemon.Options{Config: cfg, ConfigPath: path, Registerer: reg, Gatherer: reg})
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer d.Stop(context.Background())
	if _, err := d.RunNow(context.Background(), patrol.TriggerManual); err != nil {
		t.Fatal(err)
	}
	res, err := http.Get("http://" + d.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{"patrold_patrol_runs_total", "patrold_findings{", "patrold_outbox_pending", "patrold_build_info",
		"patrold_config_last_reload_successful", `patrold_patrol_skipped_ticks_total{reason="api_conflict"} 0`,
		`patrold_patrol_skipped_ticks_total{reason="tick_overlap"} 0`, "patrold_patrol_run_duration_seconds",
		"patrold_patrol_last_success_timestamp_seconds", "patrold_model_missed_signals_total 0", "patrold_model_signals_total 0",
		"go_goroutines ", "go_memstats_heap_inuse_bytes ", "process_resident_memory_bytes ", "process_open_fds "} {
		if !strings.Contains(string(data), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(string(data))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
