package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// parityRun is what a `patrold run --output json` against the PVE
// stand-in decides: the signals whole, the findings it changed and how
// many it resolved.
type parityRun struct {
	Status   string
	Signals  []signals.Signal
	Findings []string // "change key resource severity"
	Resolved int
}

// parityCLI is patrold configured against a PVE stand-in.
func parityCLI(t *testing.T, pve *pvetest.Server) func() parityRun {
	t.Helper()
	c := newCLI(t, "")
	c.appendConfig(pve.Source(t, c.dir))
	return parityRunner(t, c, pve)
}

func (c *cli) appendConfig(extra string) {
	c.t.Helper()
	f, err := os.OpenFile(c.cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(extra); err != nil {
		c.t.Fatal(err)
	}
}

// nodeSignal is a metric signal on node/pve1 as the detectors write it.
func nodeSignal(typ signals.Type, metric string, v, trigger, clear float64, held bool, summary string) signals.Signal {
	ev := map[string]any{"metric": metric, "value": v, "trigger": trigger, "clear": clear}
	if held {
		ev["held_by_hysteresis"] = true
	}
	return signals.Signal{Type: typ, ResourceID: "node/pve1", ResourceKind: "node", ResourceName: "pve1",
		Severity: "warning", Category: "performance", Value: v, Threshold: trigger, Summary: summary, Evidence: ev}
}

// TestRunHighSwapAndIOWait: through `patrold run` against the PVE
// stand-in, a node's swap and IO wait from /nodes/{node}/status open
// high_swap and high_iowait strictly above their default triggers (80,
// 10), stay open down to clear (75, 5) and resolve strictly below it.
// The first run reads PVE 7's numbers-as-strings.
func TestRunHighSwapAndIOWait(t *testing.T) {
	pve := pvetest.New(t)
	run := parityCLI(t, pve)
	const total = 10000

	// At the triggers exactly: nothing.
	pve.Set("nodes/pve1/status", pvetest.PVE7(pvetest.NodeStatus(0.05, 0.10, 8000, total)))
	if got := run(); len(got.Signals) != 0 || len(got.Findings) != 0 || got.Status != "healthy" {
		t.Fatalf("at the triggers: %+v", got)
	}

	// Just above: both open, warning.
	pve.Set("nodes/pve1/status", pvetest.NodeStatus(0.05, 0.1001, 8001, total))
	want := parityRun{Status: "issues_found", Signals: []signals.Signal{
		nodeSignal(signals.TypeHighSwap, "swap_percent", 80.01, 80, 75, false, "node swap on pve1 (node/pve1) at 80.0% (current), above 80"),
		nodeSignal(signals.TypeHighIOWait, "iowait_percent", 10.01, 10, 5, false, "node IO wait on pve1 (node/pve1) at 10.0% (current), above 10"),
	}, Findings: []string{"new high_iowait node/pve1 warning", "new high_swap node/pve1 warning"}}
	parityCompare(t, "above the triggers", run(), want)

	// At clear: held open by hysteresis.
	pve.Set("nodes/pve1/status", pvetest.NodeStatus(0.05, 0.05, 7500, total))
	want = parityRun{Status: "issues_found", Signals: []signals.Signal{
		nodeSignal(signals.TypeHighSwap, "swap_percent", 75, 80, 75, true, "node swap on pve1 (node/pve1) at 75.0% (current), still above clear 75 after exceeding 80"),
		nodeSignal(signals.TypeHighIOWait, "iowait_percent", 5, 10, 5, true, "node IO wait on pve1 (node/pve1) at 5.0% (current), still above clear 5 after exceeding 10"),
	}, Findings: []string{"unchanged high_iowait node/pve1 warning", "unchanged high_swap node/pve1 warning"}}
	parityCompare(t, "at clear", run(), want)

	// Just below clear: both resolve.
	pve.Set("nodes/pve1/status", pvetest.NodeStatus(0.05, 0.0499, 7499, total))
	parityCompare(t, "below clear", run(), parityRun{Status: "healthy", Resolved: 2,
		Findings: []string{"resolved high_iowait node/pve1 warning", "resolved high_swap node/pve1 warning"}})
}

func parityCompare(t *testing.T, step string, got, want parityRun) {
	t.Helper()
	// Round-trip want as the report does (numbers in evidence are float64).
	raw, _ := json.Marshal(want.Signals)
	want.Signals = nil
	_ = json.Unmarshal(raw, &want.Signals)
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("%s:\n got %s\nwant %s", step, g, w)
	}
}

// parityFindings are the active findings of `patrold findings list`:
// "key resource severity" to what holds it ("" for nothing).
func parityFindings(t *testing.T, c *cli) map[string]string {
	t.Helper()
	out, code := c.run("findings", "list", "--output", "json")
	if code != 0 {
		t.Fatalf("findings list: exit %d: %s", code, out)
	}
	var list []struct {
		Key         string `json:"key"`
		ResourceID  string `json:"resource_id"`
		Severity    string `json:"severity"`
		InhibitedBy string `json:"inhibited_by"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("findings list: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, f := range list {
		got[f.Key+" "+f.ResourceID+" "+f.Severity] = f.InhibitedBy
	}
	return got
}

// TestRunQuorumLost: through `patrold run` against the PVE stand-in, a
// cluster whose /cluster/status says quorate 0 is quorum_lost, critical,
// on cluster/<name>, the parent of its nodes: pve2's node_offline is held
// under it while quorum is lost and released when it is back (and
// quorum_lost resolves). A guest's unreachable finding is held too (the
// source makes the cluster one of every guest's parents; given here as
// a snapshot), its backup finding never.
func TestRunQuorumLost(t *testing.T) {
	pve := pvetest.New(t)
	pve.Set("cluster/resources", `[{"id":"node/pve1","type":"node","node":"pve1","status":"online","cpu":0.05,"maxcpu":8,"mem":1,"maxmem":4},`+
		`{"id":"node/pve2","type":"node","node":"pve2","status":"offline"}]`)
	online := map[string]bool{"pve1": true, "pve2": false}
	pve.Set("cluster/status", pvetest.PVE7(pvetest.ClusterStatus("pve-prod", true, online)))
	c := newCLI(t, "")
	c.appendConfig(pve.Source(t, c.dir))
	run := func() {
		t.Helper()
		if out, code := c.run("run", "--output", "json"); code != 0 {
			t.Fatalf("patrold run: exit %d: %s", code, out)
		}
	}
	run()
	want := map[string]string{"node_offline node/pve2 critical": ""}
	if got := parityFindings(t, c); !reflect.DeepEqual(got, want) {
		t.Fatalf("quorate: %v, want %v", got, want)
	}

	pve.Set("cluster/status", pvetest.ClusterStatus("pve-prod", false, online))
	out, code := c.run("run", "--output", "json")
	if code != 0 {
		t.Fatalf("patrold run: exit %d: %s", code, out)
	}
	var rep struct {
		Signals []signals.Signal `json:"signals"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	lost := signals.Signal{Type: signals.TypeQuorumLost, ResourceID: "cluster/pve-prod", ResourceKind: "cluster", ResourceName: "pve-prod",
		Severity: "critical", Category: "reliability", Summary: "cluster pve-prod (cluster/pve-prod) has lost quorum: 1 of 2 nodes online",
		Evidence: map[string]any{"quorate": false, "nodes": 2, "nodes_online": 1}}
	parityCompare(t, "quorum lost", parityRun{Signals: rep.Signals[:1]}, parityRun{Signals: []signals.Signal{lost}})
	lostID := findings.ID("cluster/pve-prod", findings.CategoryReliability, string(signals.TypeQuorumLost))
	want = map[string]string{"quorum_lost cluster/pve-prod critical": "", "node_offline node/pve2 critical": lostID}
	if got := parityFindings(t, c); !reflect.DeepEqual(got, want) {
		t.Fatalf("quorum lost: %v, want %v", got, want)
	}

	pve.Set("cluster/status", pvetest.ClusterStatus("pve-prod", true, online))
	run()
	want = map[string]string{"node_offline node/pve2 critical": ""}
	if got := parityFindings(t, c); !reflect.DeepEqual(got, want) {
		t.Fatalf("quorum back: %v, want %v", got, want)
	}

	// A guest of a cluster without quorum: unreachable held, backup not.
	doc := `{"version":1,"taken_at":"2026-11-29T06:00:00Z","resources":[` +
		`{"id":"cluster/c1","kind":"cluster","name":"c1","quorum":{"quorate":false,"nodes":2,"nodes_online":1}},` +
		`{"id":"node/n1","kind":"node","parent":"cluster/c1","status":"online"},` +
		`{"id":"vm/1","kind":"vm","parent":"node/n1","parents":["cluster/c1"],"status":"running","reachable":false,` +
		`"backup":{"last_status":"failed","last_finished_at":"2026-11-29T02:00:00Z","last_success_at":"2026-11-28T02:00:00Z","last_error":"no quorum"}}]}`
	file := filepath.Join(t.TempDir(), "snap.json")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	g := newCLI(t, "")
	if out, code := g.run("run", "--snapshot", file); code != 0 {
		t.Fatalf("patrold run --snapshot: exit %d: %s", code, out)
	}
	c1 := findings.ID("cluster/c1", findings.CategoryReliability, string(signals.TypeQuorumLost))
	want = map[string]string{"quorum_lost cluster/c1 critical": "", "guest_unreachable vm/1 warning": c1, "backup_failed vm/1 warning": ""}
	if got := parityFindings(t, g); !reflect.DeepEqual(got, want) {
		t.Fatalf("guest of a cluster without quorum: %v, want %v", got, want)
	}
}
