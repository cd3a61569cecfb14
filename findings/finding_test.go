package findings_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/prompt"
)

func TestID(t *testing.T) {
	sum := sha256.Sum256([]byte("storage/pve1/local-zfs:capacity:high_disk"))
	want := hex.EncodeToString(sum[:])[:16]
	if got := findings.ID("storage/pve1/local-zfs", findings.CategoryCapacity, "high_disk"); got != want {
		t.Fatalf("ID = %s, want %s", got, want)
	}
}

func TestNormalizeKey(t *testing.T) {
	cases := map[string]string{
		"high_cpu": "high_cpu", "CPU-High": "high_cpu", "cpu high": "high_cpu", "High_CPU": "high_cpu",
		"disk full": "high_disk", "smart": "smart_failure", "backup-failed": "backup_failed", "stale backup": "backup_stale",
		"ZFS Fragmentation!": "zfs-fragmentation", "  ": "general", "__x__": "x", "vm unreachable": "guest_unreachable",
	}
	for in, want := range cases {
		if got := findings.NormalizeKey(in); got != want {
			t.Errorf("NormalizeKey(%q) = %q, want %q", in, got, want)
		}
	}
	if findings.NormalizeCategory("Capacity") != findings.CategoryCapacity || findings.NormalizeCategory("weird") != findings.CategoryGeneral {
		t.Error("category normalisation")
	}
}

var t0 = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

func obs(sev findings.Severity, text string) findings.Observation {
	return findings.Observation{Key: "High CPU", ResourceID: "node/a", Category: "performance", Severity: sev, Source: findings.SourceModel, Title: prompt.Safe(text, 4000)}
}

func TestObserve(t *testing.T) {
	c := findings.Observe(nil, obs(findings.SeverityWarning, "one"), t0, "r1")
	if c.Kind != findings.ChangeNew || c.Finding.Key != "high_cpu" || c.Finding.ID != findings.ID("node/a", "performance", "high_cpu") {
		t.Fatalf("new: %+v", c)
	}
	f := c.Finding
	c = findings.Observe(&f, obs(findings.SeverityWarning, "different prose"), t0.Add(time.Hour), "r2")
	if c.Kind != findings.ChangeUnchanged || c.Finding.TimesRaised != 2 || c.Finding.Title != "different prose" {
		t.Fatalf("re-detection with new text: %+v", c)
	}
	f = c.Finding
	c = findings.Observe(&f, obs(findings.SeverityCritical, "x"), t0.Add(2*time.Hour), "r3")
	if c.Kind != findings.ChangeUpdated || c.Finding.Severity != findings.SeverityCritical {
		t.Fatalf("severity change: %+v", c)
	}
	f = c.Finding
	f.FixSummary, f.Attempts, f.LastOutcome = "restarted service", 2, findings.OutcomeFixVerified
	r := findings.Resolve(f, findings.ResolveConditionCleared, "", t0.Add(3*time.Hour), "r4")
	f = r.Finding
	c = findings.Observe(&f, obs(findings.SeverityWarning, "back"), t0.Add(4*time.Hour), "r5")
	if c.Kind != findings.ChangeReopened || c.Finding.RegressionCount != 1 || c.Finding.Attempts != 0 ||
		c.Finding.LastOutcome != "" || c.Finding.PreviousFixSummary != "restarted service" || c.Finding.ResolvedAt != nil {
		t.Fatalf("reopen: %+v", c.Finding)
	}
}

func TestDismissedStaysQuietUnlessWorse(t *testing.T) {
	f := findings.Observe(nil, obs(findings.SeverityWarning, "a"), t0, "r1").Finding
	f.DismissedReason = "expected_behavior"
	c := findings.Observe(&f, obs(findings.SeverityWarning, "a"), t0.Add(time.Hour), "r2")
	if !c.Quiet || c.Finding.SeenWhileSuppressed != 1 || c.Finding.DismissedReason == "" {
		t.Fatalf("same severity: %+v", c)
	}
	c = findings.Observe(&f, obs(findings.SeverityInfo, "a"), t0.Add(time.Hour), "r2")
	if !c.Quiet || c.Finding.Severity != findings.SeverityWarning {
		t.Fatalf("lower severity: %+v", c)
	}
	c = findings.Observe(&f, obs(findings.SeverityCritical, "a"), t0.Add(time.Hour), "r2")
	if c.Quiet || c.Finding.DismissedReason != "" || c.Kind != findings.ChangeUpdated {
		t.Fatalf("higher severity must reactivate: %+v", c)
	}
}
