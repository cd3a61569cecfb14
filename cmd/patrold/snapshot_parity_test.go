package main

import (
	"strconv"
	"testing"
	"time"

	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// pveSnapshots is GET /nodes/pve1/qemu/100/snapshot with one snapshot
// of this name taken at this time, and PVE's "current".
func pveSnapshots(name string, at time.Time) string {
	return `[{"name":"` + name + `","description":"","snaptime":` + strconv.FormatInt(at.Unix(), 10) + `,"vmstate":0},` +
		`{"name":"current","description":"You are here!","running":1,"parent":"` + name + `","digest":"5e6f"}]`
}

// snapshotSignal is snapshot_old on vm/100 as the detector writes it.
func snapshotSignal(name string, at, readAt time.Time, days int64, held bool) signals.Signal {
	ev := map[string]any{"oldest": name, "taken_at": at.UTC().Format(time.RFC3339), "days": days, "snapshots": 1,
		"read_at": readAt.UTC().Format(time.RFC3339), "trigger": 30, "clear": 25}
	summary := "vm db-1 (vm/100) has a snapshot (" + name + ") " + strconv.FormatInt(days, 10) + " days old, above 30"
	if held {
		ev["held_by_hysteresis"] = true
		summary = "vm db-1 (vm/100) has a snapshot (" + name + ") " + strconv.FormatInt(days, 10) + " days old, still above clear 25 after exceeding 30"
	}
	return signals.Signal{Type: signals.TypeSnapshotOld, ResourceID: "vm/100", ResourceKind: "vm", ResourceName: "db-1",
		Severity: "warning", Category: "reliability", Value: float64(days), Threshold: 30, Summary: summary, Evidence: ev}
}

// TestRunSnapshotOld: through `patrold run` against the PVE stand-in, a
// guest's oldest snapshot (GET /nodes/{node}/qemu/{vmid}/snapshot, its
// "current" entry ignored) opens snapshot_old strictly above 30 days;
// it is held down to 25 and resolves below it. The first run reads PVE
// 7's numbers-as-strings.
func TestRunSnapshotOld(t *testing.T) {
	pve := pvetest.New(t)
	pveGuest(pve, "")
	// The config names a parent snapshot: its snapshot list is read.
	pve.Set("nodes/pve1/qemu/100/config", `{"name":"db-1","cores":2,"memory":"4096","onboot":1,"parent":"pre-upgrade","scsi0":"local-lvm:vm-100-disk-0,size=32G"}`)
	run := parityCLI(t, pve)
	now := time.Now().Truncate(time.Second)
	path := "nodes/pve1/qemu/100/snapshot"

	// 30 days and some hours: at the trigger, nothing.
	pve.Set(path, pvetest.PVE7(pveSnapshots("pre-upgrade", now.Add(-30*24*time.Hour-3*time.Hour))))
	if got := run(); len(got.Signals) != 0 || len(got.Findings) != 0 || got.Status != "healthy" {
		t.Fatalf("at the trigger: %+v", got)
	}

	// 31 days: snapshot_old, warning.
	at := now.Add(-31*24*time.Hour - 3*time.Hour)
	pve.Set(path, pveSnapshots("pre-upgrade", at))
	got := run()
	readAt := readAtOf(t, got)
	parityCompare(t, "above the trigger", got, parityRun{Status: "issues_found",
		Signals:  []signals.Signal{snapshotSignal("pre-upgrade", at, readAt, 31, false)},
		Findings: []string{"new snapshot_old vm/100 warning"}})

	// That one deleted, the oldest left is 25 days old: held.
	at = now.Add(-25*24*time.Hour - 3*time.Hour)
	pve.Set(path, pveSnapshots("weekly", at))
	got = run()
	parityCompare(t, "at clear", got, parityRun{Status: "issues_found",
		Signals:  []signals.Signal{snapshotSignal("weekly", at, readAtOf(t, got), 25, true)},
		Findings: []string{"unchanged snapshot_old vm/100 warning"}})

	// 24 days: resolved.
	pve.Set(path, pveSnapshots("weekly", now.Add(-24*24*time.Hour-3*time.Hour)))
	parityCompare(t, "below clear", run(), parityRun{Status: "healthy", Resolved: 1,
		Findings: []string{"resolved snapshot_old vm/100 warning"}})
}

// readAtOf is the read time a run's snapshot_old evidence quotes (the
// run's own clock).
func readAtOf(t *testing.T, got parityRun) time.Time {
	t.Helper()
	if len(got.Signals) != 1 {
		t.Fatalf("signals: %+v", got.Signals)
	}
	s, _ := got.Signals[0].Evidence["read_at"].(string)
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("read_at %q: %v", s, err)
	}
	return at
}
