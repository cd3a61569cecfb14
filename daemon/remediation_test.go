package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
)

// remediationFleet writes the faults snapshot into a new directory and an
// action that fixes local-zfs by writing the healthy one in its place, and
// returns the directory and the configuration for them: the file source,
// autonomy full and the action.
func remediationFleet(t *testing.T) (dir, yaml string) {
	t.Helper()
	dir = t.TempDir()
	useSnapshot(t, dir, "faults.json")
	healthy, _ := filepath.Abs(filepath.Join("testdata", "healthy.json"))
	action := filepath.Join(dir, "grow-pool.sh")
	body := "#!/bin/sh\n# $1 is the resource id\ncp " + healthy + " " + filepath.Join(dir, "snapshot.json") + "\necho grew $1\n"
	if err := os.WriteFile(action, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, "source: {kind: file, file: {path: " + filepath.Join(dir, "snapshot.json") + "}}\n" +
		"patrol: {autonomy: full}\n" +
		"investigation: {max_concurrent: 10}\n" +
		// Only local-zfs is high_disk: the action rewrites the whole
		// snapshot, which would clear a second pool under another session.
		"alerts: {overrides: [{match: {id: 'storage/pve2/*'}, storage: {usage: {trigger: 85}}}]}\n" +
		"actions: [{name: grow-pool, command: [" + action + ", '{resource_id}'], risk: low, kinds: [storage], signals: [high_disk]}]\n"
}

// TestRemediationEndToEnd: a run hands the critical storage finding over
// NATS to the assistant worker, whose playbook runs the declared action,
// verifies with a fresh read, and publishes fix_verified; the daemon's
// outcome consumer resolves the finding.
func TestRemediationEndToEnd(t *testing.T) {
	dir, remediation := remediationFleet(t)
	yaml := "data_dir: " + dir + "\nlog: {level: warn}\n" +
		"http: {listen: '127.0.0.1:0'}\n" +
		"nats: {embedded: {listen: '127.0.0.1:0'}}\n" +
		"schedule: {cron: '@every 1h', startup_delay: 1h}\n" + remediation
	cfg, err := config.Load([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, cfg)
	// The capability manifest lists every profile's tools with their kinds.
	code, caps := call(t, "GET", "http://"+d.HTTPAddr()+"/api/v1/agent/capabilities", "", "")
	if code != 200 {
		t.Fatalf("capabilities: %d", code)
	}
	kinds := map[string]string{}
	for _, p := range caps["profiles"].([]any) {
		for _, tool := range p.(map[string]any)["tools"].([]any) {
			tm := tool.(map[string]any)
			kinds[p.(map[string]any)["profile"].(string)+"/"+tm["name"].(string)] = tm["kind"].(string)
		}
	}
	for tool, kind := range map[string]string{"detection/report_finding": "write", "detection/get_resource": "read",
		"remediation/run_action": "discriminated", "remediation/check_condition": "read", "remediation/resolve_target": "resolve"} {
		if kinds[tool] != kind {
			t.Errorf("manifest: %s is %q, want %q (all: %v)", tool, kinds[tool], kind, kinds)
		}
	}
	rep, err := d.RunNow(context.Background(), patrol.TriggerManual)
	if err != nil {
		t.Fatal(err)
	}
	id := findings.ID("storage/pve1/local-zfs", findings.CategoryCapacity, "high_disk")
	handed := false
	for _, h := range rep.HandedOver {
		handed = handed || h == id
	}
	if !handed {
		t.Fatalf("not handed over: %v", rep.HandedOver)
	}
	var seen findings.Finding
	testkit.EventuallyState(t, 20*time.Second, "a fix_verified outcome", func() (bool, string) {
		var err error
		if seen, err = d.Store().Get(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		return seen.LastOutcome == findings.OutcomeFixVerified, fmt.Sprintf("%+v", seen.Investigation)
	})
	if seen.Status != findings.StatusResolved || seen.ResolveReason != findings.ResolveFixVerified || seen.Attempts != 1 {
		t.Fatalf("verified but not resolved: %+v", seen)
	}
	// A finding with no declared action ends cannot_fix, never verified.
	cpu := findings.ID("node/pve2", findings.CategoryPerformance, "high_cpu")
	testkit.Eventually(t, 20*time.Second, "an outcome for "+cpu, func() bool {
		seen, _ = d.Store().Get(context.Background(), cpu)
		return seen.LastOutcome != ""
	})
	if seen.LastOutcome == findings.OutcomeFixVerified {
		t.Fatalf("a finding without an action claims fix_verified")
	}

	// The pool fills up again: the finding reopens, a new episode. Its
	// request carries attempt 2, so the worker runs a new session (instead
	// of replaying episode 1's outcome, which would be dropped as a
	// duplicate) and its own outcome resolves the finding again.
	useSnapshot(t, dir, "faults.json")
	if rep, err = d.RunNow(context.Background(), patrol.TriggerManual); err != nil {
		t.Fatal(err)
	}
	if len(rep.HandedOver) == 0 {
		t.Fatal("the reopened finding was not handed over")
	}
	testkit.Eventually(t, 20*time.Second, "episode 2 ends fix_verified", func() bool {
		recs, err := d.Store().Investigations(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return len(recs) == 2 && recs[1].Outcome == findings.OutcomeFixVerified
	})
	f, err := d.Store().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if f.Status != findings.StatusResolved || f.InvestigationStatus != "" || f.RegressionCount != 1 || f.Attempt != 2 || f.Attempts != 1 {
		t.Fatalf("after episode 2: status %s regressions %d %+v", f.Status, f.RegressionCount, f.Investigation)
	}
	recs, _ := d.Store().Investigations(context.Background(), id)
	if recs[0].Attempt != 1 || recs[0].Episode != 1 || recs[1].Attempt != 2 || recs[1].Episode != 2 ||
		recs[0].SessionID == "" || recs[1].SessionID == "" || recs[0].SessionID == recs[1].SessionID {
		t.Fatalf("episodes: %+v", recs)
	}
}
