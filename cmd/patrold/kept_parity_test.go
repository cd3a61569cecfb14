package main

import (
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// keptRun is what a `patrold run` against the scale stand-in decided:
// its status, findings ("change key resource severity"), resolutions,
// signals whole, and the guest paths it read.
type keptRun struct {
	Status   string
	Findings []string
	Resolved []string
	Signals  []signals.Signal
	Reads    map[string]int
}

// TestRunKeptCopiesResolveNothing: through `patrold run` against the
// scale stand-in, a second run reads no guest again (its copies are in
// the store) and its findings are the first's, unchanged; a guest read
// again whose snapshot read fails keeps its finding on the stale copy,
// whose evidence keeps the copy's read_at. Nothing resolves because a
// copy was kept (TestKeptStaleCopyMarked checks the warning). Each
// report and run summary counts the requests the stand-in answered.
func TestRunKeptCopiesResolveNothing(t *testing.T) {
	pve := pvetest.NewScale(t, 1, 2, 0)
	old := time.Now().Add(-60 * 24 * time.Hour).Unix()
	pve.Guest(100, func(g *pvetest.Guest) { g.SnapshotAt = old })
	pve.BackupAt = time.Now().Add(-time.Hour).Unix()
	c := newCLI(t, "")
	c.appendConfig(pve.Source(t, c.dir))
	var requests []int // each run's source_requests, newest first
	run := func() keptRun {
		t.Helper()
		pve.Reset()
		out, code := c.run("run", "--output", "json")
		if code != 0 && code != 1 {
			t.Fatalf("patrold run: exit %d: %s", code, out)
		}
		var rep struct {
			Status   string `json:"status"`
			Findings []struct {
				Key        string `json:"key"`
				ResourceID string `json:"resource_id"`
				Severity   string `json:"severity"`
				Change     string `json:"change"`
			} `json:"findings"`
			Resolved       []string         `json:"resolved"`
			Signals        []signals.Signal `json:"signals"`
			SourceRequests int              `json:"source_requests"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("report: %v\n%s", err, out)
		}
		got := keptRun{Status: rep.Status, Resolved: rep.Resolved, Signals: rep.Signals, Reads: map[string]int{}}
		for _, f := range rep.Findings {
			got.Findings = append(got.Findings, f.Change+" "+f.Key+" "+f.ResourceID+" "+f.Severity)
		}
		slices.Sort(got.Findings)
		for p, n := range pve.ByPath() {
			if seg := strings.Split(p, "/"); len(seg) >= 5 && (seg[2] == "qemu" || seg[2] == "lxc") {
				got.Reads[p] = n
			}
		}
		// The report counts what the stand-in answered.
		if rep.SourceRequests != pve.Requests() {
			t.Errorf("report source_requests %d, the stand-in answered %d", rep.SourceRequests, pve.Requests())
		}
		requests = append([]int{rep.SourceRequests}, requests...)
		return got
	}
	check := func(step string, got, want keptRun) {
		t.Helper()
		if got.Status != want.Status || !slices.Equal(got.Findings, want.Findings) || !slices.Equal(got.Resolved, want.Resolved) ||
			!reflect.DeepEqual(got.Signals, want.Signals) || !maps.Equal(got.Reads, want.Reads) {
			t.Errorf("%s:\n got %+v\nwant %+v", step, got, want)
		}
	}

	// 101 has no snapshot: its config names no parent, and its list is
	// not read.
	all := map[string]int{"nodes/pve1/qemu/100/config": 1, "nodes/pve1/qemu/100/snapshot": 1, "nodes/pve1/lxc/101/config": 1}
	first := run()
	if len(first.Signals) != 1 || first.Signals[0].Type != signals.TypeSnapshotOld {
		t.Fatalf("first run signals %+v, want one snapshot_old", first.Signals)
	}
	check("first", first, keptRun{Status: "issues_found", Findings: []string{"new snapshot_old vm/100 warning"}, Signals: first.Signals, Reads: all})
	unchanged := []string{"unchanged snapshot_old vm/100 warning"}
	check("second", run(), keptRun{Status: "issues_found", Findings: unchanged, Signals: first.Signals, Reads: map[string]int{}})

	// Restarted: read again; its snapshot list fails and the copy holds.
	pve.Guest(100, func(g *pvetest.Guest) { g.Uptime = 30 })
	pve.Fail("nodes/pve1/qemu/100/snapshot", http.StatusInternalServerError)
	check("stale", run(), keptRun{Status: "issues_found", Findings: unchanged, Signals: first.Signals,
		Reads: map[string]int{"nodes/pve1/qemu/100/config": 1, "nodes/pve1/qemu/100/snapshot": 1}})

	// The run list's summaries carry each run's count.
	out, code := c.run("runs", "list", "--output", "json")
	var list []struct {
		Summary struct {
			SourceRequests int `json:"source_requests"`
		} `json:"summary"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("runs list: exit %d: %s", code, out)
	}
	var got []int
	for _, r := range list {
		got = append(got, r.Summary.SourceRequests)
	}
	if !slices.Equal(got, requests) || requests[1] >= requests[2] {
		t.Errorf("run summaries' source_requests %v, want %v (the steady run fewer than the first)", got, requests)
	}
}
