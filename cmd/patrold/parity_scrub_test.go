package main

import (
	"testing"
	"time"

	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// TestRunZFSScrubOverdue: through `patrold run` against the PVE
// stand-in, the scan line of /nodes/{node}/disks/zfs/{pool} opens
// zfs_scrub_overdue on the pool: a scrub 34.6 days old nothing, 35.6 a
// warning (trigger 35), held at 30.6 (clear 30), resolved at 29.6; a
// scrub that found or repaired errors, and none ever, a warning; one
// running resolves. The first run reads PVE 7's numbers-as-strings.
func TestRunZFSScrubOverdue(t *testing.T) {
	pve := pvetest.New(t)
	pve.Set("nodes/pve1/disks/zfs", pvetest.PVE7(`[{"name":"tank","size":1000,"alloc":100,"free":900,"frag":1,"dedup":1,"health":"ONLINE"}]`))
	run := parityCLI(t, pve)
	scan := func(line string) {
		pve.Set("nodes/pve1/disks/zfs/tank", `{"name":"tank","state":"ONLINE","status":"","action":"","scan":"`+line+`","errors":"No known data errors",`+
			`"children":[{"name":"tank","state":"ONLINE","read":0,"write":0,"cksum":0,"msg":"","leaf":0}]}`)
	}
	var at time.Time
	scrubbed := func(ago time.Duration, repaired string, errs string) {
		at = time.Now().Add(-ago).UTC().Truncate(time.Second)
		scan("scrub repaired " + repaired + " in 00:04:12 with " + errs + " errors on " + at.Format("Mon Jan  2 15:04:05 2006"))
	}
	day := 24 * time.Hour
	const id = "storage/pve1/zpool/tank"
	sig := func(value, threshold float64, summary string, ev map[string]any) signals.Signal {
		return signals.Signal{Type: signals.TypeZFSScrubOverdue, ResourceID: id, ResourceKind: "storage", ResourceName: "tank",
			Severity: "warning", Category: "reliability", Value: value, Threshold: threshold, Summary: summary, Evidence: ev}
	}
	aged := func(days float64, held bool) map[string]any {
		ev := map[string]any{"scrub": "finished", "last_scrub": at.Format(time.RFC3339), "days_since": days, "trigger": 35, "clear": 30}
		if held {
			ev["held_by_hysteresis"] = true
		}
		return ev
	}

	scrubbed(34*day+15*time.Hour, "0B", "0")
	if got := run(); len(got.Signals) != 0 || got.Status != "healthy" {
		t.Fatalf("34.6 days: %+v", got)
	}

	scrubbed(35*day+15*time.Hour, "0B", "0")
	parityCompare(t, "35.6 days", run(), parityRun{Status: "issues_found", Signals: []signals.Signal{sig(35.6, 35,
		"ZFS pool tank ("+id+"): last scrub 35.6 days ago, above 35", aged(35.6, false))},
		Findings: []string{"new zfs_scrub_overdue " + id + " warning"}})

	scrubbed(30*day+15*time.Hour, "0B", "0")
	parityCompare(t, "30.6 days", run(), parityRun{Status: "issues_found", Signals: []signals.Signal{sig(30.6, 35,
		"ZFS pool tank ("+id+"): last scrub 30.6 days ago, still at or above clear 30 after exceeding 35", aged(30.6, true))},
		Findings: []string{"unchanged zfs_scrub_overdue " + id + " warning"}})

	scrubbed(29*day+15*time.Hour, "0B", "0")
	parityCompare(t, "29.6 days", run(), parityRun{Status: "healthy", Resolved: 1,
		Findings: []string{"resolved zfs_scrub_overdue " + id + " warning"}})

	scrubbed(2*day+15*time.Hour, "12K", "3")
	parityCompare(t, "errors", run(), parityRun{Status: "issues_found", Signals: []signals.Signal{sig(0, 0,
		"ZFS pool tank ("+id+"): its last scrub on "+at.Format(time.DateOnly)+" found 3 errors and repaired 12K",
		map[string]any{"scrub": "finished", "last_scrub": at.Format(time.RFC3339), "days_since": 2.6, "errors": 3, "repaired": "12K"})},
		Findings: []string{"reopened zfs_scrub_overdue " + id + " warning"}})

	scan("scrub in progress since Sun Nov 29 00:24:01 2026")
	parityCompare(t, "running", run(), parityRun{Status: "healthy", Resolved: 1,
		Findings: []string{"resolved zfs_scrub_overdue " + id + " warning"}})

	scan("none requested")
	parityCompare(t, "never", run(), parityRun{Status: "issues_found", Signals: []signals.Signal{sig(0, 0,
		"ZFS pool tank ("+id+") has never been scrubbed", map[string]any{"scrub": "never"})},
		Findings: []string{"reopened zfs_scrub_overdue " + id + " warning"}})

	// A resilver says nothing of the last scrub: the finding stays.
	scan("resilvered 1.20G in 00:10:03 with 0 errors on Sun Nov 29 00:34:04 2026")
	if got := run(); got.Resolved != 0 || len(got.Signals) != 0 {
		t.Fatalf("resilver: %+v", got)
	}
}
