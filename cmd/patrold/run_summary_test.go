package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/patrold/patrold/patrol"
)

// summaryReport is a run that changed two findings and re-detected four
// unchanged, of two severities and three categories.
func summaryReport() *patrol.Report {
	return &patrol.Report{
		RunID: "01RUN", Trigger: patrol.TriggerManual, Status: "critical", Analysis: patrol.AnalysisDeterministic, DurationMS: 12,
		Resources: map[string]int{"vm": 4, "node": 1},
		Findings: []patrol.FindingRef{
			{ID: "f1", Key: "high_cpu", ResourceID: "vm/1", Category: "high_cpu", Severity: "warning", Change: "unchanged", Title: "High CPU on vm-1"},
			{ID: "f2", Key: "high_memory", ResourceID: "vm/2", Category: "high_memory", Severity: "critical", Change: "new", Title: "High memory on vm-2"},
			{ID: "f3", Key: "high_memory", ResourceID: "vm/3", Category: "high_memory", Severity: "critical", Change: "unchanged", Title: "High memory on vm-3"},
			{ID: "f4", Key: "disk_full", ResourceID: "vm/4", Category: "disk_full", Severity: "warning", Change: "unchanged", Title: "Disk full on vm-4"},
			{ID: "f5", Key: "high_cpu", ResourceID: "vm/5", Category: "high_cpu", Severity: "warning", Change: "unchanged", Title: "High CPU on vm-5"},
			{ID: "f6", Key: "node_down", ResourceID: "node/1", Category: "node_down", Severity: "critical", Change: "reopened", Title: "Node down"},
		},
		Resolved: []string{"f0"},
	}
}

const summaryHead = "run 01RUN  trigger=manual  status=critical  analysis=deterministic  12ms\n" +
	"resources: node 1, vm 4, container 0, storage 0, disk 0\n" +
	"signals: 0\n" +
	"findings:\n"

// TestRunTextCountsUnchanged: the text report lists every finding a run
// changed and counts the unchanged ones by severity and by category (most
// first, then by name); with all it lists them too, in the report's order.
func TestRunTextCountsUnchanged(t *testing.T) {
	var got bytes.Buffer
	printReport(&got, summaryReport(), false)
	want := summaryHead +
		"  NEW       critical f2               high_memory       vm/2                           High memory on vm-2\n" +
		"  REOPENED  critical f6               node_down         node/1                         Node down\n" +
		"unchanged: 4 (--all lists them)\n" +
		"  by severity: warning 3, critical 1\n" +
		"  by category: high_cpu 2, disk_full 1, high_memory 1\n" +
		"resolved: 1\n"
	if got.String() != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got.String(), want)
	}
	got.Reset()
	printReport(&got, summaryReport(), true)
	want = summaryHead +
		"  UNCHANGED warning  f1               high_cpu          vm/1                           High CPU on vm-1\n" +
		"  NEW       critical f2               high_memory       vm/2                           High memory on vm-2\n" +
		"  UNCHANGED critical f3               high_memory       vm/3                           High memory on vm-3\n" +
		"  UNCHANGED warning  f4               disk_full         vm/4                           Disk full on vm-4\n" +
		"  UNCHANGED warning  f5               high_cpu          vm/5                           High CPU on vm-5\n" +
		"  REOPENED  critical f6               node_down         node/1                         Node down\n" +
		"resolved: 1\n"
	if got.String() != want {
		t.Errorf("--all:\n%s\nwant:\n%s", got.String(), want)
	}
}

// TestRunTextSteadyRun: a second run of the same snapshot changes
// nothing. `patrold run` prints no finding line, only the counts. `run
// --all` prints one UNCHANGED line per finding of the JSON report. `runs
// show` (a stored report, read whole) prints every line as --all does.
func TestRunTextSteadyRun(t *testing.T) {
	c := newCLI(t, "")
	if out, code := c.run("run", "--snapshot", "../../examples/small-faults.json"); code != 0 {
		t.Fatalf("first run: %d %s", code, out)
	}
	out, code := c.run("run", "--snapshot", "../../examples/small-faults.json")
	if code != 0 {
		t.Fatalf("steady run: %d %s", code, out)
	}
	if strings.Contains(out, "findings:") || !strings.Contains(out, "unchanged: 9 (--all lists them)\n  by severity: ") {
		t.Errorf("steady run, text:\n%s", out)
	}
	all, code := c.run("run", "--snapshot", "../../examples/small-faults.json", "--all")
	if code != 0 {
		t.Fatalf("run --all: %d %s", code, all)
	}
	js, code := c.run("run", "--snapshot", "../../examples/small-faults.json", "--output", "json")
	var rep patrol.Report
	if code != 0 || json.Unmarshal([]byte(js), &rep) != nil {
		t.Fatalf("run json: %d %s", code, js)
	}
	var want []string
	for _, f := range rep.Findings {
		want = append(want, "UNCHANGED "+string(f.Severity)+" "+f.ID)
	}
	line := regexp.MustCompile(`(?m)^  (UNCHANGED) +(\S+) +(\S+) `)
	var listed []string
	for _, m := range line.FindAllStringSubmatch(all, -1) {
		listed = append(listed, m[1]+" "+m[2]+" "+m[3])
	}
	if len(want) != 9 || strings.Join(listed, "\n") != strings.Join(want, "\n") || strings.Contains(all, "unchanged:") {
		t.Errorf("run --all lists %q, want %q:\n%s", listed, want, all)
	}
	show, code := c.run("runs", "show", rep.RunID)
	var shown []string
	for _, m := range line.FindAllStringSubmatch(show, -1) {
		shown = append(shown, m[1]+" "+m[2]+" "+m[3])
	}
	if code != 0 || strings.Join(shown, "\n") != strings.Join(want, "\n") {
		t.Errorf("runs show lists %q, want %q:\n%s", shown, want, show)
	}
}
