package prometheus

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/snapshot"
)

// lookBinary finds an external binary. Missing binaries skip the test,
// unless CI=true, where they fail it.
func lookBinary(t *testing.T, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%v not installed (CI=true): apt-get install -y prometheus prometheus-node-exporter", names)
	}
	t.Skipf("%v not installed; set CI=true to make this a failure", names)
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func start(t *testing.T, out *testkit.LogBuffer, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
}

func TestIntegrationNodeExporter(t *testing.T) {
	promBin := lookBinary(t, "prometheus")
	nodeBin := lookBinary(t, "prometheus-node-exporter", "node_exporter")
	dir := t.TempDir()
	nodePort, promPort := freePort(t), freePort(t)
	logs := &testkit.LogBuffer{}

	start(t, logs, nodeBin, "--web.listen-address=127.0.0.1:"+strconv.Itoa(nodePort),
		"--collector.disable-defaults", "--collector.cpu", "--collector.meminfo", "--collector.filesystem")
	config := fmt.Sprintf("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"+
		"scrape_configs:\n  - job_name: node\n    static_configs: [{targets: ['127.0.0.1:%d']}]\n", nodePort)
	configFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	start(t, logs, promBin, "--config.file="+configFile, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(promPort))
	url := "http://127.0.0.1:" + strconv.Itoa(promPort)

	src, err := New(Options{URL: url, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyState(t, 30*time.Second, "prometheus ready", func() (bool, string) { return ready(url), logs.String() })
	want := "node/127.0.0.1"
	var node snapshot.Resource
	testkit.EventuallyState(t, 30*time.Second, "cpu, memory and their averages for "+want, func() (bool, string) {
		snap, problems, err := src.Collect(context.Background())
		if err == nil && len(problems) == 0 {
			node = byID(snap)[want]
			// The averages need two scrapes inside the window: wait
			// for every metric the assertions below read.
			m := node.Metrics.Map()
			_, cpu := m["cpu_percent"]
			_, cpuAvg := m["cpu_percent_avg"]
			_, memAvg := m["memory_percent_avg"]
			_, iowait := m["iowait_percent"]
			_, iowaitAvg := m["iowait_percent_avg"]
			if cpu && cpuAvg && memAvg && iowait && iowaitAvg && m["memory_percent"] > 0 {
				return true, ""
			}
		}
		return false, fmt.Sprintf("err %v problems %v snapshot %+v\noutput:\n%s", err, problems, snap, logs)
	})
	if node.Status != snapshot.StatusOnline {
		t.Errorf("%s status = %q, want online (up == 1)", want, node.Status)
	}
	metrics := []string{"cpu_percent", "cpu_percent_avg", "memory_percent", "memory_percent_avg", "iowait_percent", "iowait_percent_avg"}
	// swap_percent exists only where the machine has swap.
	if hasSwap(t) {
		metrics = append(metrics, "swap_percent")
	} else if v, ok := node.Metrics.Map()["swap_percent"]; ok {
		t.Errorf("swap_percent %v on a machine without swap", v)
	}
	for _, m := range metrics {
		v, ok := node.Metrics.Map()[m]
		if !ok || v < 0 || v > 100 {
			t.Errorf("%s = %v (present %v), want a percentage", m, v, ok)
		}
	}
	if node.Metrics.Map()["memory_percent"] == 100 || node.Metrics.Map()["window_seconds"] != DefaultWindow.Seconds() {
		t.Errorf("implausible metrics: %v", node.Metrics)
	}
	t.Logf("%s: %v", want, node.Metrics)
}

// hasSwap reports whether this machine has swap (SwapTotal above 0).
func hasSwap(t *testing.T) bool {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "SwapTotal:" {
			return f[1] != "0"
		}
	}
	return false
}

func ready(url string) bool {
	resp, err := http.Get(url + "/-/ready")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
