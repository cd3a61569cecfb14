package main

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// openedAgo moves the detected_at of the active finding of key on
// resource back to ago before now, as if it had opened then; it returns
// the new time.
func openedAgo(t *testing.T, c *cli, key, resource string, ago time.Duration) time.Time {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(c.dir, "var", "patrold.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var raw string
	if err := db.QueryRow(`SELECT detected_at FROM findings WHERE key = ? AND resource_id = ? AND status = 'active'`, key, resource).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339Nano, raw); err != nil {
		t.Fatalf("detected_at %q: %v", raw, err)
	}
	at := time.Now().Add(-ago).UTC().Truncate(time.Second)
	if _, err := db.Exec(`UPDATE findings SET detected_at = ? WHERE key = ? AND resource_id = ? AND status = 'active'`,
		at.Format(time.RFC3339Nano), key, resource); err != nil {
		t.Fatal(err)
	}
	return at
}

// TestRunUpdatesPending: through `patrold run` against the PVE stand-in,
// a node's pending updates of /nodes/{node}/apt/update open
// updates_pending on the node at watch; pending for 30.0 days (counted
// from when the finding opened) it stays watch, for 30.1 a warning
// (node.updates_age 30); one from a security repository is a warning at
// once. A refused read (Sys.Modify) is a coverage gap and resolves
// nothing; none pending resolves it. The answer has no numbers, so
// PVE 7's shape is PVE 8's.
func TestRunUpdatesPending(t *testing.T) {
	pve := pvetest.New(t)
	c := newCLI(t, "")
	c.appendConfig(pve.Source(t, c.dir))
	run := parityRunner(t, c, pve)
	day := 24 * time.Hour
	sig := func(severity string, packages, security int, names, summary string, since *time.Time, days float64) signals.Signal {
		ev := map[string]any{"packages": packages, "security": security, "trigger": 30, "names": names}
		if since != nil {
			ev["pending_days"] = days
			ev["pending_since"] = since.Format(time.RFC3339)
		}
		return signals.Signal{Type: signals.TypeUpdatesPending, ResourceID: "node/pve1", ResourceKind: "node", ResourceName: "pve1",
			Severity: severity, Category: "security", Value: float64(packages), Threshold: 1, Summary: summary, Evidence: ev}
	}
	two := "[" + pvetest.Update("zlib1g", "Debian", "libs", "1:1.2.13.dfsg-1", "1:1.2.13.dfsg-2") + "," +
		pvetest.Update("pve-manager", "Proxmox", "admin", "8.2.7", "8.2.8") + "]"

	if got := run(); len(got.Signals) != 0 || got.Status != "healthy" {
		t.Fatalf("none pending: %+v", got)
	}

	pve.Set("nodes/pve1/apt/update", two)
	parityCompare(t, "two pending", run(), parityRun{Status: "healthy", Signals: []signals.Signal{sig("watch", 2, 0, "pve-manager,zlib1g",
		"node pve1 (node/pve1): 2 package updates pending", nil, 0)},
		Findings: []string{"new updates_pending node/pve1 watch"}})

	at := openedAgo(t, c, "updates_pending", "node/pve1", 30*day+time.Minute)
	parityCompare(t, "30.0 days", run(), parityRun{Status: "healthy", Signals: []signals.Signal{sig("watch", 2, 0, "pve-manager,zlib1g",
		"node pve1 (node/pve1): 2 package updates pending", &at, 30)},
		Findings: []string{"unchanged updates_pending node/pve1 watch"}})

	at = openedAgo(t, c, "updates_pending", "node/pve1", 30*day+3*time.Hour)
	parityCompare(t, "30.1 days", run(), parityRun{Status: "issues_found", Signals: []signals.Signal{sig("warning", 2, 0, "pve-manager,zlib1g",
		"node pve1 (node/pve1): 2 package updates pending, pending 30.1 days (more than 30)", &at, 30.1)},
		Findings: []string{"updated updates_pending node/pve1 warning"}})

	at = openedAgo(t, c, "updates_pending", "node/pve1", day)
	pve.Set("nodes/pve1/apt/update", "["+pvetest.Update("libssl3", "Debian", "bookworm-security/libs", "3.0.14-1~deb12u2", "3.0.15-1~deb12u1")+","+two[1:])
	parityCompare(t, "security", run(), parityRun{Status: "issues_found", Signals: []signals.Signal{sig("warning", 3, 1, "libssl3,pve-manager,zlib1g",
		"node pve1 (node/pve1): 3 package updates pending, 1 from a security repository", &at, 1)},
		Findings: []string{"unchanged updates_pending node/pve1 warning"}})

	pve.Fail("nodes/pve1/apt/update", 403, "Permission check failed (/nodes/pve1, Sys.Modify)")
	parityCompare(t, "refused", run(), parityRun{Status: "issues_found",
		Findings: []string{"new coverage_gap patrold/source/coverage/apt_update warning"}})

	pve.Set("nodes/pve1/apt/update", `[]`)
	parityCompare(t, "none pending", run(), parityRun{Status: "healthy", Resolved: 2, Findings: []string{
		"resolved coverage_gap patrold/source/coverage/apt_update warning",
		"resolved updates_pending node/pve1 warning",
	}})
}
