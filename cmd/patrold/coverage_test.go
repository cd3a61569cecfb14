package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/patrold/patrold/signals/coverage"
)

// TestCoverageJudgesTheConfiguredSources: `patrold coverage` judges the
// union list for the kinds the configuration collects from. The demo
// source reads no quorum; a Proxmox source beside Prometheus does.
func TestCoverageJudgesTheConfiguredSources(t *testing.T) {
	c := newCLI(t, "")
	out, code := c.run("coverage")
	quorumDemo := "cluster quorum                      quorum_lost           not evaluable\n" +
		"    awesome-prometheus-alerts pve-exporter: pve_cluster_info quorate 0: critical\n" +
		"    Zabbix Proxmox VE by HTTP: cluster not quorate: high\n" +
		"    Pulse (users' requests): #428, #1085\n" +
		"    patrold: quorate false: critical; holds node and guest findings\n" +
		"    why: no configured source (demo) reads cluster quorum (/cluster/status); read by proxmox\n"
	if code != 0 || !strings.HasPrefix(out, "sources: demo\n\n") || !strings.Contains(out, quorumDemo) {
		t.Fatalf("coverage on the demo source (exit %d):\n%s", code, out)
	}
	rows := coverage.Judge([]string{"demo"})
	if n := len(rows); !strings.HasSuffix(out, "\n"+countLine(rows)+"\n") || n < 30 {
		t.Fatalf("coverage summary of %d checks:\n%s", n, out)
	}

	c = newCLI(t, `sources:
  - {name: pve, kind: proxmox, proxmox: {url: "https://pve1.example:8006", token_id: "patrold@pve!patrol", token_secret_file: /etc/patrold/pve.token}}
  - {name: prom, kind: prometheus, prometheus: {url: "http://127.0.0.1:9090"}}
  - {name: pve2, kind: proxmox, proxmox: {url: "https://pve2.example:8006", token_id: "patrold@pve!patrol", token_secret_file: /etc/patrold/pve.token}}
`)
	js, code := c.run("coverage", "--output", "json")
	var got Coverage
	if code != 0 || json.Unmarshal([]byte(js), &got) != nil {
		t.Fatalf("coverage --output json (exit %d):\n%s", code, js)
	}
	want := Coverage{Sources: []string{"prometheus", "proxmox"}, Checks: coverage.Judge([]string{"prometheus", "proxmox"})}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("coverage json:\n got %+v\nwant %+v", got, want)
	}
	if r := rowOf(got.Checks, "cluster quorum"); r.Verdict != coverage.Covered || r.Why != "" {
		t.Fatalf("quorum with a Proxmox source: %+v", r)
	}
	if r := rowOf(got.Checks, "inodes"); r.Verdict != coverage.NotImplemented || r.Why != "patrold has no detector for it" {
		t.Fatalf("inodes: %+v", r)
	}
}

func rowOf(rows []coverage.Row, check string) coverage.Row {
	for _, r := range rows {
		if r.Check == check {
			return r
		}
	}
	return coverage.Row{}
}

// countLine is the summary line for rows, counted here.
func countLine(rows []coverage.Row) string {
	n := map[string]int{}
	for _, r := range rows {
		n[r.Verdict]++
	}
	return fmt.Sprintf("%d checks: %d covered, %d not evaluable, %d not implemented",
		len(rows), n[coverage.Covered], n[coverage.NotEvaluable], n[coverage.NotImplemented])
}
