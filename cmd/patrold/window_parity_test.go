package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// TestRunOperationWindow: through `patrold run` against the PVE stand-in,
// a guest locked for backup while a vzdump job runs is in an operation
// window: its high_cpu is held under patrold's window finding (info,
// the task in its evidence) and released on the first run after the
// window, when the window finding resolves. A migrate task holds it the
// same way without a lock.
func TestRunOperationWindow(t *testing.T) {
	pve := pvetest.New(t)
	busy := func(lock string) {
		l := ""
		if lock != "" {
			l = `,"lock":"` + lock + `"`
		}
		pve.Set("cluster/resources", `[{"id":"node/pve1","type":"node","node":"pve1","status":"online","cpu":0.05,"maxcpu":8,"mem":4294967296,"maxmem":34359738368},`+
			`{"id":"qemu/100","type":"qemu","vmid":100,"node":"pve1","name":"db-1","status":"running","cpu":0.95,"maxcpu":2,"mem":1073741824,"maxmem":4294967296`+l+`}]`)
	}
	pveGuest(pve, "backup")
	busy("backup")
	now := time.Now().Truncate(time.Second)
	job := pveTask("vzdump", "", "root@pam", now.Add(-5*time.Minute), time.Time{}, "")
	pve.Set("nodes/pve1/tasks", `[`+job+`]`)
	c := newCLI(t, "")
	c.appendConfig(pve.Source(t, c.dir))
	run := func() {
		t.Helper()
		if out, code := c.run("run", "--output", "json"); code != 0 {
			t.Fatalf("patrold run: exit %d: %s", code, out)
		}
		if u := pve.Unexpected(); len(u) > 0 {
			t.Fatalf("patrold asked the stand-in for paths it does not serve: %q", u)
		}
	}
	window := findings.ID(patrol.WindowResourceID("vm/100"), findings.CategoryPerformance, findings.KeyOperationWindow)

	run()
	want := map[string]string{"high_cpu vm/100 warning": window, "operation_window patrold/window/vm/100 info": ""}
	if got := parityFindings(t, c); !reflect.DeepEqual(got, want) {
		t.Fatalf("backup window: %v, want %v", got, want)
	}
	f := windowFinding(t, c, window)
	upid := "UPID:pve1:000A1B2C:0BADF00D:" + strconv.FormatInt(now.Add(-5*time.Minute).Unix(), 16) + ":vzdump::root@pam:"
	wantEv := `guest="vm/100" lock="backup" task="vzdump" upid="` + upid + `" user="root@pam" started_at=` + now.Add(-5*time.Minute).UTC().Format(time.RFC3339)
	if f.Evidence != wantEv || f.Severity != findings.SeverityInfo || f.Title != "vm db-1 is in an operation window" {
		t.Errorf("window finding: severity %s, title %q, evidence %s\nwant evidence %s", f.Severity, f.Title, f.Evidence, wantEv)
	}

	// The backup ended, the guest is still busy: released.
	busy("")
	pve.Set("nodes/pve1/tasks", `[`+pveTask("vzdump", "", "root@pam", now.Add(-5*time.Minute), now, "OK")+`]`)
	run()
	want = map[string]string{"high_cpu vm/100 warning": ""}
	if got := parityFindings(t, c); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the window: %v, want %v", got, want)
	}

	// A migration running, no lock read: held again.
	pve.Set("nodes/pve1/tasks", `[`+pveTask("qmigrate", "100", "ops@pve", now.Add(-time.Minute), time.Time{}, "")+`]`)
	run()
	want = map[string]string{"high_cpu vm/100 warning": window, "operation_window patrold/window/vm/100 info": ""}
	if got := parityFindings(t, c); !reflect.DeepEqual(got, want) {
		t.Fatalf("migrate window: %v, want %v", got, want)
	}
}

// TestRunWindowHoldsOnlyPerformanceAndReachability: a guest in a
// window has its unreachable and high_cpu findings held, never its
// backup or disk findings; a guest of a node in HA maintenance has its
// unreachable finding held under the node's ha_error (watch), and
// nothing else.
func TestRunWindowHoldsOnlyPerformanceAndReachability(t *testing.T) {
	doc := `{"version":1,"taken_at":"2026-11-29T06:00:00Z","resources":[` +
		`{"id":"node/n1","kind":"node","status":"online"},` +
		`{"id":"node/n2","kind":"node","status":"online","ha":{"managed":true,"state":"maintenance"}},` +
		`{"id":"vm/1","kind":"vm","parent":"node/n1","status":"running","reachable":false,"metrics":{"cpu_percent":95,"disk_percent":99},` +
		`"guest":{"lock":{"name":"snapshot","since":"2026-11-29T05:58:00Z"}},` +
		`"backup":{"last_status":"failed","last_finished_at":"2026-11-29T02:00:00Z","last_success_at":"2026-11-28T02:00:00Z","last_error":"locked"}},` +
		`{"id":"vm/2","kind":"vm","parent":"node/n2","status":"running","reachable":false,"metrics":{"cpu_percent":95}}]}`
	file := filepath.Join(t.TempDir(), "snap.json")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCLI(t, "")
	if out, code := c.run("run", "--snapshot", file); code != 0 {
		t.Fatalf("patrold run --snapshot: exit %d: %s", code, out)
	}
	window := findings.ID(patrol.WindowResourceID("vm/1"), findings.CategoryPerformance, findings.KeyOperationWindow)
	maint := findings.ID("node/n2", findings.CategoryReliability, string(signals.TypeHAError))
	want := map[string]string{
		"operation_window patrold/window/vm/1 info": "",
		"guest_unreachable vm/1 warning":            window,
		"high_cpu vm/1 warning":                     window,
		"high_disk vm/1 critical":                   "",
		"backup_failed vm/1 warning":                "",
		"ha_error node/n2 watch":                    "",
		"guest_unreachable vm/2 warning":            maint,
		"high_cpu vm/2 warning":                     "",
	}
	if got := parityFindings(t, c); !reflect.DeepEqual(got, want) {
		t.Fatalf("held: %v\nwant %v", got, want)
	}
}

// windowFinding reads one finding through `patrold findings show`.
func windowFinding(t *testing.T, c *cli, id string) findings.Finding {
	t.Helper()
	out, code := c.run("findings", "show", id, "--output", "json")
	if code != 0 {
		t.Fatalf("findings show: exit %d: %s", code, out)
	}
	var doc struct {
		Finding findings.Finding `json:"finding"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("findings show: %v\n%s", err, out)
	}
	return doc.Finding
}
