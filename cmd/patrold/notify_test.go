package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/store"
)

// alertmanager is a real Alertmanager (Debian's prometheus-alertmanager)
// on a loopback port with its storage in a temp dir.
type alertmanager struct {
	t    *testing.T
	bin  string
	dir  string
	addr string
	cmd  *exec.Cmd
	log  *testkit.LogBuffer
}

// alertmanagerBinary finds the binary; it skips only outside CI.
func alertmanagerBinary(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"prometheus-alertmanager", "alertmanager"} {
		if bin, err := exec.LookPath(name); err == nil {
			return bin
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("prometheus-alertmanager is required in CI (.ci/run installs it)")
	}
	t.Skip("prometheus-alertmanager not on PATH")
	return ""
}

func startAlertmanager(t *testing.T) *alertmanager {
	am := &alertmanager{t: t, bin: alertmanagerBinary(t), dir: t.TempDir(), addr: freeAddr(t)}
	cfg := "route: {receiver: blackhole, group_wait: 1s, group_interval: 1s, repeat_interval: 1h}\nreceivers: [{name: blackhole}]\n"
	if err := os.WriteFile(filepath.Join(am.dir, "alertmanager.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	am.start()
	t.Cleanup(am.stop)
	return am
}

func (am *alertmanager) start() {
	am.t.Helper()
	am.log = &testkit.LogBuffer{}
	am.cmd = exec.Command(am.bin, "--config.file="+filepath.Join(am.dir, "alertmanager.yml"),
		"--storage.path="+filepath.Join(am.dir, "data"), "--web.listen-address="+am.addr,
		"--cluster.listen-address=", "--log.level=warn")
	am.cmd.Stdout, am.cmd.Stderr = am.log, am.log
	if err := am.cmd.Start(); err != nil {
		am.t.Fatal(err)
	}
	testkit.EventuallyState(am.t, 20*time.Second, "alertmanager ready", func() (bool, string) {
		resp, err := http.Get("http://" + am.addr + "/-/ready")
		if err != nil {
			return false, err.Error() + "\n" + am.log.String()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}

func (am *alertmanager) stop() {
	if am.cmd == nil {
		return
	}
	_ = am.cmd.Process.Signal(syscall.SIGTERM)
	_ = am.cmd.Wait()
	am.cmd = nil
}

// amAlert is the part of Alertmanager's GettableAlert the test compares.
type amAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	Status      struct {
		State string `json:"state"`
	} `json:"status"`
}

func (am *alertmanager) alerts() ([]amAlert, error) {
	resp, err := http.Get("http://" + am.addr + "/api/v2/alerts")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /api/v2/alerts: %s: %s", resp.Status, body)
	}
	var out []amAlert
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Labels["finding_id"] < out[j].Labels["finding_id"] })
	return out, nil
}

// expectedAlerts is what Alertmanager must show for the store's active
// findings, written out label by label (not through the sink's code).
func expectedAlerts(t *testing.T, st *store.Store) []amAlert {
	t.Helper()
	active, err := st.Active(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []amAlert
	for _, f := range active {
		a := amAlert{
			Labels: map[string]string{"alertname": f.Key, "resource_id": f.ResourceID, "resource_kind": f.ResourceKind,
				"severity": string(f.Severity), "category": string(f.Category), "finding_id": f.ID, "team": "infra"},
			Annotations: map[string]string{"summary": f.Title, "link": "https://patrold.example/findings/" + f.ID},
			StartsAt:    f.DetectedAt.UTC().Truncate(time.Millisecond),
		}
		// Who filed it, and the node it is on when it has one (docs/NOTIFY.md).
		if f.Source != "" {
			a.Labels["source"] = string(f.Source)
		}
		if f.ResourceNode != "" {
			a.Labels["node"] = f.ResourceNode
		}
		if f.Description != "" {
			a.Annotations["description"] = f.Description
		}
		if f.Recommendation != "" {
			a.Annotations["recommendation"] = f.Recommendation
		}
		a.Status.State = "active"
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Labels["finding_id"] < out[j].Labels["finding_id"] })
	return out
}

// matchAlerts compares labels, annotations, state and start of every
// alert (Alertmanager keeps milliseconds); the alert of reopened must start
// after the finding's first detection instead.
func matchAlerts(am *alertmanager, want []amAlert, reopened string) (bool, string) {
	got, err := am.alerts()
	if err != nil {
		return false, err.Error()
	}
	want = slices.Clone(want)
	for i := range got {
		got[i].StartsAt = got[i].StartsAt.UTC().Truncate(time.Millisecond)
		if i < len(want) && want[i].Labels["finding_id"] == reopened && reopened != "" && got[i].StartsAt.After(want[i].StartsAt) {
			want[i].StartsAt = got[i].StartsAt
		}
	}
	if !reflect.DeepEqual(got, want) {
		return false, fmt.Sprintf("got  %+v\nwant %+v", got, want)
	}
	return true, ""
}

func setUsage(t *testing.T, src, dst, id string, usage float64) {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range doc["resources"].([]any) {
		res := r.(map[string]any)
		if res["id"] == id {
			res["metrics"].(map[string]any)["usage_percent"] = usage
			found = true
		}
	}
	if !found {
		t.Fatalf("%s not in %s", id, src)
	}
	out, _ := json.Marshal(doc)
	if err := os.WriteFile(dst, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

var failedLine = regexp.MustCompile(`(?m)^patrold_notify_failed_total\{sink="am"\} (\d+)$`)

// TestNotifyAlertmanagerEndToEnd: a patrol run over the example snapshot,
// `patrold notify` and a real Alertmanager: its alerts are the active
// findings label for label; a run that resolves a finding ends its alert;
// with Alertmanager stopped nothing is lost.
func TestNotifyAlertmanagerEndToEnd(t *testing.T) {
	am := startAlertmanager(t)
	faults, _ := filepath.Abs("../../examples/small-faults.json")
	dir := t.TempDir()
	snap := filepath.Join(dir, "snapshot.json")
	setUsage(t, faults, snap, "storage/pve1/local-zfs", 96.3)
	c := newCLI(t, "http: {listen: '"+freeAddr(t)+"'}\nnats: {embedded: {listen: '"+freeAddr(t)+"'}}\nlog: {level: warn}\n"+
		"schedule: {startup_delay: 1h}\nsource: {kind: file, file: {path: "+snap+"}}\n"+
		"notify:\n  in_serve: false\n  sinks:\n"+
		"    - {name: am, kind: alertmanager, backoff: 200ms, max_backoff: 1s, max_deliver: 1000,\n"+
		"       alertmanager: {urls: ['http://"+am.addr+"'], labels: {team: infra}, resend_interval: 1s,\n"+
		"                      link: 'https://patrold.example/findings/{finding_id}'}}\n")
	d := startDaemon(t, c)
	ctx := context.Background()
	if _, err := d.RunNow(ctx, patrol.TriggerManual); err != nil {
		t.Fatal(err)
	}

	// patrold notify starts after the first run: it rebuilds the active
	// alerts from the stream and posts them.
	nctx, stop := context.WithCancel(ctx)
	ready := make(chan string, 1)
	var out testkit.LogBuffer
	root := newRoot(&app{stdout: &out, stderr: &out, notifyReady: func(addr string) { ready <- addr }})
	root.SetArgs([]string{"--config", c.cfg, "notify", "--listen", "127.0.0.1:0"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(nctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("patrold notify: %v\n%s", err, out.String())
		}
	}()
	var metricsAddr string
	select {
	case metricsAddr = <-ready:
	case err := <-done:
		t.Fatalf("patrold notify exited: %v\n%s", err, out.String())
	case <-time.After(20 * time.Second):
		t.Fatal("patrold notify did not start")
	}
	want := expectedAlerts(t, d.Store())
	n := len(want)
	if n < 5 {
		t.Fatalf("the example should leave several active findings, got %d", n)
	}
	testkit.EventuallyState(t, 20*time.Second, "alerts after the first run", func() (bool, string) { return matchAlerts(am, want, "") })

	// second run: local-zfs below its clear threshold resolves high_disk
	setUsage(t, faults, snap, "storage/pve1/local-zfs", 50)
	rep, err := d.RunNow(ctx, patrol.TriggerManual)
	if err != nil || len(rep.Resolved) != 1 {
		t.Fatalf("second run: %v, resolved %v", err, rep.Resolved)
	}
	reopened := rep.Resolved[0]
	want = expectedAlerts(t, d.Store())
	if len(want) != n-1 {
		t.Fatalf("active after resolving: %d, want %d", len(want), n-1)
	}
	testkit.EventuallyState(t, 20*time.Second, "the resolved finding's alert ends", func() (bool, string) { return matchAlerts(am, want, "") })

	// Alertmanager down while a run reopens the finding: deliveries fail
	// and are retried; once it is back the alerts are all there.
	am.stop()
	setUsage(t, faults, snap, "storage/pve1/local-zfs", 96.3)
	if _, err := d.RunNow(ctx, patrol.TriggerManual); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyState(t, 20*time.Second, "failed deliveries while Alertmanager is down", func() (bool, string) {
		body := scrape(t, metricsAddr)
		m := failedLine.FindStringSubmatch(body)
		failed := 0
		if m != nil {
			failed, _ = strconv.Atoi(m[1])
		}
		return failed > 0, body
	})
	am.start()
	want = expectedAlerts(t, d.Store())
	if len(want) != n {
		t.Fatalf("active after reopening: %d, want %d", len(want), n)
	}
	// the reopened alert starts at its reopening, not at its first detection
	testkit.EventuallyState(t, 20*time.Second, "alerts after Alertmanager came back", func() (bool, string) { return matchAlerts(am, want, reopened) })
	testkit.EventuallyState(t, 20*time.Second, "every event acknowledged, none dead-lettered", func() (bool, string) {
		body := scrape(t, metricsAddr)
		return strings.Contains(body, `patrold_notify_lag_messages{sink="am"} 0`) &&
			strings.Contains(body, `patrold_notify_dead_letters_total{sink="am"} 0`), body
	})
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestNotifyCommandNeedsSinks(t *testing.T) {
	c := newCLI(t, "")
	out, code := c.run("notify")
	if code != 2 || !strings.Contains(out, "notify.sinks: no sink is configured") {
		t.Fatalf("notify without sinks: exit %d: %s", code, out)
	}
	inServe := newCLI(t, "notify: {sinks: [{name: am, kind: alertmanager, alertmanager: {urls: ['http://127.0.0.1:9093']}}]}\n")
	out, code = inServe.run("notify")
	if code != 2 || !strings.Contains(out, "notify.in_serve: true runs the sinks inside patrold serve; set it to false to run them with patrold notify") {
		t.Fatalf("notify with in_serve: exit %d: %s", code, out)
	}
	bad := newCLI(t, "notify: {sinks: [{name: am, kind: alertmanager}]}\n")
	out, code = bad.run("notify")
	if code != 2 || !strings.Contains(out, "notify.sinks[0].alertmanager.urls: at least one Alertmanager URL is required") {
		t.Fatalf("notify with a bad sink: exit %d: %s", code, out)
	}
}
