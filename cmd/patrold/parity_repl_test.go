package main

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// replStandIn is the PVE stand-in with guest vm/100 (app) on pve1.
func replStandIn(t *testing.T) *pvetest.Server {
	pve := pvetest.New(t)
	pve.Set("cluster/resources", `[{"id":"node/pve1","type":"node","node":"pve1","status":"online","cpu":0.05,"maxcpu":8,"mem":1,"maxmem":4},`+
		`{"id":"qemu/100","type":"qemu","vmid":100,"name":"app","node":"pve1","status":"stopped","template":0}]`)
	pve.Set("nodes/pve1/qemu/100/config", `{"name":"app"}`)
	return pve
}

// replSignal is a replication_failed signal on vm/100 as the detector
// writes it.
func replSignal(severity string, value, threshold float64, summary string, ev map[string]any) signals.Signal {
	return signals.Signal{Type: signals.TypeReplicationFailed, ResourceID: "vm/100", ResourceKind: "vm", ResourceName: "app",
		Severity: severity, Category: "backup", Value: value, Threshold: threshold, Summary: summary, Evidence: ev}
}

// TestRunReplicationFailed: through `patrold run` against the PVE
// stand-in, /nodes/{node}/replication opens replication_failed on the
// source guest: fail_count 0 nothing, 1 warning (the trigger), 3
// critical; a last sync 2.9 intervals of */15 old nothing, 3.5 a
// warning; an old sync on a schedule patrold does not understand
// nothing. A failed read resolves nothing; the job gone resolves. The
// first run reads PVE 7's numbers-as-strings.
func TestRunReplicationFailed(t *testing.T) {
	pve := replStandIn(t)
	run := parityCLI(t, pve)
	ago := func(d time.Duration) int64 { return time.Now().Add(-d).Unix() }
	job := func(schedule string, lastSync int64, fails int, msg string) {
		pve.Set("nodes/pve1/replication", "["+pvetest.ReplicationJob(100, "pve2", schedule, lastSync, fails, msg)+"]")
	}
	synced := func(unix int64) string { return time.Unix(unix, 0).UTC().Format(time.RFC3339) }

	last := ago(time.Minute)
	pve.Set("nodes/pve1/replication", pvetest.PVE7("["+pvetest.ReplicationJob(100, "pve2", "*/15", last, 0, "")+"]"))
	if got := run(); len(got.Signals) != 0 || len(got.Findings) != 0 || got.Status != "healthy" {
		t.Fatalf("in sync: %+v", got)
	}

	job("*/15", last, 1, "no route to host")
	want := parityRun{Status: "issues_found", Signals: []signals.Signal{replSignal("warning", 1, 1,
		"replication of app (vm/100): job 100-0 failed 1 times in a row (at or above 1)",
		map[string]any{"job": "100-0", "fail_count": 1, "target": "pve2", "error": "no route to host", "last_sync": synced(last),
			"schedule": "*/15", "trigger": 1, "clear": 1, "critical": 3})},
		Findings: []string{"new replication_failed vm/100 warning"}}
	parityCompare(t, "one failure", run(), want)

	job("*/15", last, 3, "no route to host")
	want = parityRun{Status: "critical", Signals: []signals.Signal{replSignal("critical", 3, 3,
		"replication of app (vm/100): job 100-0 failed 3 times in a row (at or above 3)",
		map[string]any{"job": "100-0", "fail_count": 3, "target": "pve2", "error": "no route to host", "last_sync": synced(last),
			"schedule": "*/15", "trigger": 1, "clear": 1, "critical": 3})},
		Findings: []string{"updated replication_failed vm/100 critical"}}
	parityCompare(t, "three failures", run(), want)

	// Synced again, 2.9 intervals ago: below the lag trigger, resolved.
	last = ago(2610 * time.Second)
	job("*/15", last, 0, "")
	parityCompare(t, "2.9 intervals", run(), parityRun{Status: "healthy", Resolved: 1,
		Findings: []string{"resolved replication_failed vm/100 critical"}})

	// 3.5 intervals: late.
	last = ago(3150 * time.Second)
	job("*/15", last, 0, "")
	want = parityRun{Status: "issues_found", Signals: []signals.Signal{replSignal("warning", 3.5, 3,
		"replication of app (vm/100): job 100-0 last synced 3.5 intervals of */15 ago (above 3)",
		map[string]any{"job": "100-0", "fail_count": 0, "target": "pve2", "last_sync": synced(last), "schedule": "*/15",
			"lag_intervals": 3.5, "lag_trigger": 3})},
		Findings: []string{"reopened replication_failed vm/100 warning"}}
	parityCompare(t, "3.5 intervals", run(), want)

	// The jobs not read: nothing resolves.
	pve.Fail("nodes/pve1/replication", 500, "pvesr state locked")
	if got := run(); got.Resolved != 0 || len(got.Signals) != 0 {
		t.Fatalf("not read: %+v", got)
	}

	// A schedule patrold does not understand: no lag is guessed.
	job("sat 02:00", ago(30*24*time.Hour), 0, "")
	parityCompare(t, "unknown schedule", run(), parityRun{Status: "healthy", Resolved: 1,
		Findings: []string{"resolved replication_failed vm/100 warning"}})
}

// TestRunReplicationHysteresis: with guest.replication trigger 2 and
// clear 1, a job at 2 failures opens replication_failed, at 1 it is held
// open, at 0 it resolves; the job removed files nothing.
func TestRunReplicationHysteresis(t *testing.T) {
	pve := replStandIn(t)
	c := newCLI(t, "alerts:\n  defaults:\n    guest:\n      replication: {trigger: 2, clear: 1}\n")
	c.appendConfig(pve.Source(t, c.dir))
	run := parityRunner(t, c, pve)
	last := time.Now().Add(-time.Minute).Unix()
	job := func(fails int) {
		pve.Set("nodes/pve1/replication", "["+pvetest.ReplicationJob(100, "pve2", "*/15", last, fails, "")+"]")
	}
	ev := func(n int, held bool) map[string]any {
		m := map[string]any{"job": "100-0", "fail_count": n, "target": "pve2", "last_sync": time.Unix(last, 0).UTC().Format(time.RFC3339),
			"schedule": "*/15", "trigger": 2, "clear": 1, "critical": 3}
		if held {
			m["held_by_hysteresis"] = true
		}
		return m
	}
	job(1)
	if got := run(); len(got.Signals) != 0 || got.Status != "healthy" {
		t.Fatalf("one failure under trigger 2: %+v", got)
	}
	job(2)
	parityCompare(t, "two failures", run(), parityRun{Status: "issues_found", Signals: []signals.Signal{replSignal("warning", 2, 2,
		"replication of app (vm/100): job 100-0 failed 2 times in a row (at or above 2)", ev(2, false))},
		Findings: []string{"new replication_failed vm/100 warning"}})
	job(1)
	parityCompare(t, "held at one", run(), parityRun{Status: "issues_found", Signals: []signals.Signal{replSignal("warning", 1, 2,
		"replication of app (vm/100): job 100-0 failed 1 times in a row (at or above 2); held until below clear", ev(1, true))},
		Findings: []string{"unchanged replication_failed vm/100 warning"}})
	pve.Set("nodes/pve1/replication", `[]`)
	parityCompare(t, "job removed", run(), parityRun{Status: "healthy", Resolved: 1,
		Findings: []string{"resolved replication_failed vm/100 warning"}})
}

// parityRunner runs patrold once per call through c against the
// stand-in pve and reads the report; parityCLI configures c itself.
func parityRunner(t *testing.T, c *cli, pve *pvetest.Server) func() parityRun {
	t.Helper()
	return func() parityRun {
		t.Helper()
		out, code := c.run("run", "--output", "json")
		if code != 0 {
			t.Fatalf("patrold run: exit %d: %s", code, out)
		}
		var rep struct {
			Status   string           `json:"status"`
			Signals  []signals.Signal `json:"signals"`
			Findings []struct {
				Key        string `json:"key"`
				ResourceID string `json:"resource_id"`
				Severity   string `json:"severity"`
				Change     string `json:"change"`
			} `json:"findings"`
			Resolved []string `json:"resolved"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("report: %v\n%s", err, out)
		}
		got := parityRun{Status: rep.Status, Resolved: len(rep.Resolved)}
		if len(rep.Signals) > 0 {
			got.Signals = rep.Signals
		}
		for _, f := range rep.Findings {
			got.Findings = append(got.Findings, f.Change+" "+f.Key+" "+f.ResourceID+" "+f.Severity)
		}
		slices.Sort(got.Findings)
		if u := pve.Unexpected(); len(u) > 0 {
			t.Fatalf("patrold asked the stand-in for paths it does not serve: %q", u)
		}
		return got
	}
}
