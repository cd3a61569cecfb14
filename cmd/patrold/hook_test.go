package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
)

// TestAlertmanagerTriggersScopedRun: a real Alertmanager, configured
// with deploy/alertmanager-receiver.yml, fires an alert naming a node at
// patrold's hook; patrold runs a scoped run over that node and what is
// on it, with trigger alert and the alert's name as its reason.
func TestAlertmanagerTriggersScopedRun(t *testing.T) {
	bin := alertmanagerBinary(t)
	dir := t.TempDir()
	token := filepath.Join(dir, "am.token")
	if err := os.WriteFile(token, []byte("s3cret-trigger-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	faults, _ := filepath.Abs("../../examples/small-faults.json")
	addr := freeAddr(t)
	c := newCLI(t, "http: {listen: '"+addr+"', tokens: [{name: alertmanager, token_file: "+token+", scope: trigger}]}\n"+
		"nats: {embedded: {listen: '"+freeAddr(t)+"'}}\nlog: {level: warn}\n"+
		"schedule: {startup_delay: 1h}\nsource: {kind: file, file: {path: "+faults+"}}\n")
	d := startDaemon(t, c)

	example, err := os.ReadFile("../../deploy/alertmanager-receiver.yml")
	if err != nil {
		t.Fatal(err)
	}
	amCfg := strings.NewReplacer("http://127.0.0.1:9477", "http://"+d.HTTPAddr(), "/etc/alertmanager/patrold.token", token,
		"group_wait: 10s", "group_wait: 1s").Replace(string(example))
	am := &alertmanager{t: t, bin: bin, dir: t.TempDir(), addr: freeAddr(t)}
	if err := os.WriteFile(filepath.Join(am.dir, "alertmanager.yml"), []byte(amCfg), 0o600); err != nil {
		t.Fatal(err)
	}
	am.start()
	t.Cleanup(am.stop)

	alert := `[{"labels": {"alertname": "HostDown", "node": "pve2", "severity": "critical"}},
		{"labels": {"alertname": "PatroldOwn", "node": "pve1", "finding_id": "0123456789abcdef"}}]`
	resp, err := http.Post("http://"+am.addr+"/api/v2/alerts", "application/json", bytes.NewBufferString(alert))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("post alert: %s", resp.Status)
	}
	var rep struct {
		Trigger string        `json:"trigger"`
		Scope   *patrol.Scope `json:"scope"`
	}
	testkit.EventuallyState(t, 30*time.Second, "patrold runs the alert's scoped run", func() (bool, string) {
		runs, _, err := d.Store().RunsPage(context.Background(), findings.Page{Limit: 10})
		if err != nil || len(runs) == 0 {
			return false, "no run yet\n" + am.log.String()
		}
		full, err := d.Store().Run(context.Background(), runs[0].ID)
		if err != nil || full.FinishedAt == nil {
			return false, "running"
		}
		return json.Unmarshal(full.Report, &rep) == nil && rep.Scope != nil, string(full.Report)
	})
	// node/pve2 and its guests, storage and disks in the example.
	want := &patrol.Scope{Resources: []string{"node/pve2"}, Reason: "alertmanager: HostDown", Patrolled: rep.Scope.Patrolled}
	if rep.Trigger != string(patrol.TriggerAlert) || !reflect.DeepEqual(rep.Scope, want) || rep.Scope.Patrolled < 2 {
		t.Fatalf("run trigger %q scope %+v, want alert %+v (more than the node patrolled)", rep.Trigger, rep.Scope, want)
	}
	// patrold's own alert (finding_id) never triggers it: one run only.
	runs, _, err := d.Store().RunsPage(context.Background(), findings.Page{Limit: 10})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v %d", err, len(runs))
	}
}

// TestTriggerCommand: `patrold trigger` signs a request with the data
// directory's deployment key and the daemon's writer takes it, then
// refuses the same resource under the per-resource limit; the run is
// the trigger's scoped run.
func TestTriggerCommand(t *testing.T) {
	faults, _ := filepath.Abs("../../examples/small-faults.json")
	c := newCLI(t, "http: {listen: '127.0.0.1:0'}\nnats: {embedded: {listen: '"+freeAddr(t)+"'}}\nlog: {level: warn}\n"+
		"schedule: {startup_delay: 1h}\nsource: {kind: file, file: {path: "+faults+"}}\n")
	d := startDaemon(t, c)
	out, code := c.run("trigger", "--resource", "node/pve2", "--reason", "HostDown on pve2", "-o", "json")
	var ans struct {
		Outcome   string   `json:"outcome"`
		RunID     string   `json:"run_id"`
		Resources []string `json:"resources"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &ans) != nil || ans.Outcome != "taken" || ans.RunID == "" || !reflect.DeepEqual(ans.Resources, []string{"node/pve2"}) {
		t.Fatalf("trigger: exit %d\n%s", code, out)
	}
	var rep struct {
		Trigger string        `json:"trigger"`
		Scope   *patrol.Scope `json:"scope"`
	}
	testkit.EventuallyState(t, 30*time.Second, "the triggered run finishes", func() (bool, string) {
		full, err := d.Store().Run(context.Background(), ans.RunID)
		if err != nil || full.FinishedAt == nil {
			return false, "running"
		}
		return json.Unmarshal(full.Report, &rep) == nil, string(full.Report)
	})
	want := &patrol.Scope{Resources: []string{"node/pve2"}, Reason: "HostDown on pve2", Patrolled: rep.Scope.Patrolled}
	if rep.Trigger != string(patrol.TriggerAlert) || !reflect.DeepEqual(rep.Scope, want) {
		t.Fatalf("run trigger %q scope %+v, want alert %+v", rep.Trigger, rep.Scope, want)
	}
	if out, code := c.run("trigger", "--resource", "node/pve2"); code != 0 || out != "trigger refused: node/pve2\n" {
		t.Fatalf("second trigger: exit %d %q, want refused under the per-resource limit", code, out)
	}
	if out, code := c.run("trigger", "--reason", "x"); code != 2 || !strings.Contains(out, "--resource: at least one resource id") {
		t.Fatalf("trigger without --resource: exit %d %q, want usage", code, out)
	}
}

// startDaemon starts the daemon of c's configuration in this process;
// it stops with the test.
func startDaemon(t *testing.T, c *cli) *daemon.Daemon {
	t.Helper()
	cfg, err := (&app{configPath: c.cfg}).loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	d, err := daemon.New(daemon.Options{Config: cfg, Registerer: reg, Gatherer: reg, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(context.Background()) })
	return d
}
