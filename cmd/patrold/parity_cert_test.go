package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// TestRunCertificateExpiring: through `patrold run` against the PVE
// stand-in, the node certificate of /nodes/{node}/certificates/info that
// expires first opens certificate_expiring on the node: 30.6 days left
// nothing, 29.6 a warning (trigger 30), held at 33.1 (clear 35), 7.6 a
// warning and 6.6 critical (critical 7), expired critical; renewed, it
// resolves. A failed read resolves nothing. The first run reads PVE 7's
// numbers-as-strings.
func TestRunCertificateExpiring(t *testing.T) {
	pve := pvetest.New(t)
	run := parityCLI(t, pve)
	var notAfter time.Time
	left := func(d time.Duration) {
		notAfter = time.Now().Add(d).Truncate(time.Second)
		pve.Set("nodes/pve1/certificates/info", pvetest.Certificates(time.Now().Add(2*365*24*time.Hour).Unix(), notAfter.Unix()))
	}
	day := 24 * time.Hour
	sig := func(severity string, days, threshold float64, summary string, held bool) signals.Signal {
		ev := map[string]any{"not_after": notAfter.UTC().Format(time.RFC3339), "days_left": days, "trigger": 30, "clear": 35, "critical": 7,
			"file": "pveproxy-ssl.pem", "subject": "/CN=pve1.example.com"}
		if held {
			ev["held_by_hysteresis"] = true
		}
		return signals.Signal{Type: signals.TypeCertificateExpiring, ResourceID: "node/pve1", ResourceKind: "node", ResourceName: "pve1",
			Severity: severity, Category: "reliability", Value: days, Threshold: threshold, Summary: summary, Evidence: ev}
	}

	left(30*day + 15*time.Hour)
	pve.Set("nodes/pve1/certificates/info", pvetest.PVE7(pvetest.Certificates(time.Now().Add(2*365*24*time.Hour).Unix(), notAfter.Unix())))
	if got := run(); len(got.Signals) != 0 || got.Status != "healthy" {
		t.Fatalf("30.6 days: %+v", got)
	}

	left(29*day + 15*time.Hour)
	parityCompare(t, "29.6 days", run(), parityRun{Status: "issues_found", Signals: []signals.Signal{sig("warning", 29.6, 30,
		"node pve1 (node/pve1): certificate pveproxy-ssl.pem expires in 29.6 days (at or below 30)", false)},
		Findings: []string{"new certificate_expiring node/pve1 warning"}})

	left(33*day + 3*time.Hour)
	parityCompare(t, "33.1 days", run(), parityRun{Status: "issues_found", Signals: []signals.Signal{sig("warning", 33.1, 30,
		"node pve1 (node/pve1): certificate pveproxy-ssl.pem expires in 33.1 days, still at or below clear 35 after reaching 30", true)},
		Findings: []string{"unchanged certificate_expiring node/pve1 warning"}})

	left(7*day + 15*time.Hour)
	parityCompare(t, "7.6 days", run(), parityRun{Status: "issues_found", Signals: []signals.Signal{sig("warning", 7.6, 30,
		"node pve1 (node/pve1): certificate pveproxy-ssl.pem expires in 7.6 days (at or below 30)", false)},
		Findings: []string{"unchanged certificate_expiring node/pve1 warning"}})

	left(6*day + 15*time.Hour)
	parityCompare(t, "6.6 days", run(), parityRun{Status: "critical", Signals: []signals.Signal{sig("critical", 6.6, 7,
		"node pve1 (node/pve1): certificate pveproxy-ssl.pem expires in 6.6 days (at or below 7)", false)},
		Findings: []string{"updated certificate_expiring node/pve1 critical"}})

	left(-day - 3*time.Hour)
	parityCompare(t, "expired", run(), parityRun{Status: "critical", Signals: []signals.Signal{sig("critical", -1.2, 7,
		fmt.Sprintf("node pve1 (node/pve1): certificate pveproxy-ssl.pem expired on %s", notAfter.UTC().Format(time.DateOnly)), false)},
		Findings: []string{"unchanged certificate_expiring node/pve1 critical"}})

	pve.Fail("nodes/pve1/certificates/info", 500, "unable to read certificate")
	if got := run(); got.Resolved != 0 || len(got.Signals) != 0 {
		t.Fatalf("not read: %+v", got)
	}

	left(90 * day)
	parityCompare(t, "renewed", run(), parityRun{Status: "healthy", Resolved: 1,
		Findings: []string{"resolved certificate_expiring node/pve1 critical"}})
}
