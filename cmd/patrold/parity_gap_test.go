package main

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// gapFinding is the whole of a coverage_gap finding as `patrold findings
// list` shows it.
type gapFinding struct {
	Key            string `json:"key"`
	ResourceID     string `json:"resource_id"`
	Severity       string `json:"severity"`
	Category       string `json:"category"`
	Title          string `json:"title"`
	Description    string `json:"description"`
	Recommendation string `json:"recommendation"`
	Evidence       string `json:"evidence"`
}

func gapFindings(t *testing.T, c *cli) []gapFinding {
	t.Helper()
	out, code := c.run("findings", "list", "--output", "json")
	if code != 0 {
		t.Fatalf("findings list: exit %d: %s", code, out)
	}
	var list []gapFinding
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("findings list: %v\n%s", err, out)
	}
	var got []gapFinding
	for _, f := range list {
		if f.Key == "coverage_gap" {
			got = append(got, f)
		}
	}
	slices.SortFunc(got, func(a, b gapFinding) int { return strings.Compare(a.ResourceID, b.ResourceID) })
	return got
}

// TestRunCoverageGap: through `patrold run` against the PVE stand-in, a
// read the token may not make (403) or the API does not serve (501)
// files coverage_gap, a warning on the source naming the check, the keys
// resting on it, the endpoint and the privilege; the run is never
// degraded by it nor healthy with it, and the finding of the check it
// could not evaluate stays open. A node that stops answering resolves
// neither; the next complete run that reads both resolves them.
func TestRunCoverageGap(t *testing.T) {
	pve := pvetest.New(t)
	c := newCLI(t, "")
	c.appendConfig(pve.Source(t, c.dir))
	run := parityRunner(t, c, pve)
	certs := func(d time.Duration) {
		pve.Set("nodes/pve1/certificates/info", pvetest.Certificates(time.Now().Add(2*365*24*time.Hour).Unix(), time.Now().Add(d).Unix()))
	}
	day := 24 * time.Hour

	certs(20 * day)
	if got := run(); got.Status != "issues_found" || !reflect.DeepEqual(got.Findings, []string{"new certificate_expiring node/pve1 warning"}) {
		t.Fatalf("20 days: %+v", got)
	}

	pve.Fail("nodes/pve1/certificates/info", 403, "Permission check failed (/nodes/pve1, Sys.Audit)")
	pve.Fail("nodes/pve1/replication", 501, "Method 'GET /nodes/pve1/replication' not implemented")
	parityCompare(t, "refused", run(), parityRun{Status: "issues_found", Findings: []string{
		"new coverage_gap patrold/source/coverage/certificates warning",
		"new coverage_gap patrold/source/coverage/replication warning",
	}})
	want := []gapFinding{{
		Key: "coverage_gap", ResourceID: "patrold/source/coverage/certificates", Severity: "warning", Category: "reliability",
		Title: "patrold cannot evaluate certificates (certificate_expiring)",
		Description: "The source's answer to GET /nodes/pve1/certificates/info left certificate_expiring unevaluated, so none of their findings is opened or resolved: " +
			"node pve1: HTTP 403 Permission check failed (/nodes/pve1, Sys.Audit); grant the API token Sys.Audit for certificate_expiring",
		Recommendation: "Grant the source's API token Sys.Audit (a role on the path the endpoint names); the finding resolves at the next complete run that reads it.",
		Evidence:       `check="certificates" keys="certificate_expiring" endpoint="GET /nodes/pve1/certificates/info" status=403 privilege="Sys.Audit"`,
	}, {
		Key: "coverage_gap", ResourceID: "patrold/source/coverage/replication", Severity: "warning", Category: "reliability",
		Title: "patrold cannot evaluate replication (replication_failed)",
		Description: "The source's answer to GET /nodes/pve1/replication left replication_failed unevaluated, so none of their findings is opened or resolved: " +
			"node pve1: HTTP 501 Method 'GET /nodes/pve1/replication' not implemented; this PVE does not serve it: replication_failed not evaluated",
		Recommendation: "This version of the API does not serve GET /nodes/pve1/replication; upgrade it to evaluate the check. The finding resolves at the next complete run that reads it.",
		Evidence:       `check="replication" keys="replication_failed" endpoint="GET /nodes/pve1/replication" status=501`,
	}}
	got := gapFindings(t, c)
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("coverage gaps:\n got %s\nwant %s", g, w)
	}
	if f := parityFindings(t, c); len(f) != 3 {
		t.Errorf("active findings %v: want certificate_expiring and two coverage gaps", f)
	}

	// pve1 stops answering: today's rules (degraded), and neither the gap
	// nor the finding it hides resolves.
	pve.Fail("nodes/pve1/status", 595, "no route to host")
	if got := run(); got.Status != "degraded" || got.Resolved != 0 {
		t.Fatalf("pve1 down: %+v", got)
	}

	pve.Set("nodes/pve1/status", pvetest.NodeStatus(0.05, 0.001, 0, 8589934592))
	pve.Set("nodes/pve1/replication", `[]`)
	certs(90 * day)
	parityCompare(t, "read again", run(), parityRun{Status: "healthy", Resolved: 3, Findings: []string{
		"resolved certificate_expiring node/pve1 warning",
		"resolved coverage_gap patrold/source/coverage/certificates warning",
		"resolved coverage_gap patrold/source/coverage/replication warning",
	}})
}
