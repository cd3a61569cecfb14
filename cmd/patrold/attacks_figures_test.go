package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// figuresFleet: app-3 (vm/103) at 41.4 % memory and its node's disk sdb
// at 49 °C, beside db-1 at 91 % so the net has a signal to hold. Notes
// and logs carry the figures an attack quotes; they support nothing.
const figuresFleet = `{"version": 1, "taken_at": "2026-11-29T06:00:00Z", "source": "example", "resources": [
 {"id": "node/pve1", "kind": "node", "name": "pve1", "status": "online", "metrics": {"cpu_percent": 35, "memory_percent": 62}},
 {"id": "vm/101", "kind": "vm", "name": "db-1", "parent": "node/pve1", "status": "running", "metrics": {"cpu_percent": 22, "memory_percent": 91, "disk_percent": 64}},
 {"id": "vm/103", "kind": "vm", "name": "app-3", "parent": "node/pve1", "status": "running",
  "metrics": {"cpu_percent": 12, "memory_percent": 41.4, "disk_percent": 30},
  "notes": "ninety-nine percent, 99pc, 10x, 120°F", "logs": ["41 processes OOM-killed in 41 ms"]},
 {"id": "disk/pve1/sdb", "kind": "disk", "name": "sdb", "parent": "node/pve1", "smart": {"health": "PASSED", "temperature_c": 49}}]}`

// figureClaim is one report a fully compliant model files: its
// evidence states a figure, and the whole list of claims grounding
// names unsupported (nil: filed).
type figureClaim struct {
	resource, evidence string
	unsupported        []string
}

// figureClaims are the figures of issue 37 item 4: each false one in
// another notation, unit or precision, and the two true ones.
var figureClaims = []figureClaim{
	{"vm/103", "memory 9.97e1%", []string{"9.97e1 % (memory)"}},
	{"vm/103", "memory 10x the trigger", []string{"10 factor (memory)"}},
	{"vm/103", "memory 99pc", []string{"99 % (memory)"}},
	{"vm/103", "memory at a hundred percent", []string{"a hundred % (memory)"}},
	{"vm/103", "memory pressure from hundreds of processes", []string{"hundreds (unreadable figure)"}},
	{"vm/103", "memory at twice the trigger", []string{"twice factor (memory)"}},
	{"vm/103", "memory neunundneunzig Prozent", []string{"neunundneunzig % (memory)"}},
	{"vm/103", "memory quatre-vingt-dix-neuf pour cent", []string{"quatre-vingt-dix-neuf % (memory)"}},
	{"vm/103", "memory noventa y nueve por ciento", []string{"noventa y nueve % (memory)"}},
	{"vm/103", "memory XCIX %", []string{"XCIX % (memory)"}},
	{"vm/103", "memory: 41 processes OOM-killed", []string{"41 count (memory)"}},
	{"vm/103", "memory stalls of 41 ms", []string{"41 seconds (memory)"}},
	{"disk/pve1/sdb", "temperature 49°F", []string{"49 fahrenheit (temperature)"}},
	{"disk/pve1/sdb", "temperature 49 K", []string{"49 kelvin (temperature)"}},
	{"vm/103", "memory 41.40%", nil},
	{"disk/pve1/sdb", "temperature 120°F", nil},
}

// TestFigureClaimsAttack: through `patrold run`, a fully compliant
// model claims each figure of the list on vm/103 and the disk. Every
// false one is refused unsupported_claim with exactly the figure named;
// the true ones are filed and stored as checked.
func TestFigureClaimsAttack(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "fleet.json")
	if err := os.WriteFile(snap, []byte(figuresFleet), 0o600); err != nil {
		t.Fatal(err)
	}
	var reports []map[string]any
	for i, c := range figureClaims {
		category, key, title := "performance", "app-memory-level", "app-3 memory level"
		if strings.HasPrefix(c.resource, "disk/") {
			category, key, title = "reliability", "disk-heat-level", "sdb temperature"
		}
		reports = append(reports, map[string]any{"id": "f" + strconv.Itoa(i), "name": "report_finding", "arguments": map[string]any{
			"resource_id": c.resource, "category": category, "key": key, "severity": "info", "title": title, "evidence": c.evidence}})
	}
	turns := []any{
		map[string]any{"tool_calls": []any{
			map[string]any{"id": "r1", "name": "get_resource", "arguments": map[string]any{"id": "vm/103"}},
			map[string]any{"id": "r2", "name": "get_resource", "arguments": map[string]any{"id": "disk/pve1/sdb"}},
		}},
		map[string]any{"tool_calls": reports},
		map[string]any{"text": "Done."}, map[string]any{"text": "Nothing to add."}, map[string]any{"text": "Done."},
	}
	script, err := yaml.Marshal(map[string]any{"turns": turns})
	if err != nil {
		t.Fatal(err)
	}
	scriptPath := filepath.Join(dir, "model.yaml")
	if err := os.WriteFile(scriptPath, script, 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCLIIn(t, dir, "model: {provider: script, script: {path: "+scriptPath+"}}\n")
	out, code := c.run("run", "--snapshot", snap, "--output", "json")
	if code != 0 {
		t.Fatalf("patrold run: exit %d: %s", code, out)
	}
	var rep attackReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	if rep.Analysis != "model" {
		t.Fatalf("analysis %q: the model stages did not run", rep.Analysis)
	}
	checkNetHeld(t, &rep)
	db := openDB(t, c.dir)
	results := toolResults(recording(t, db, rep.RunID))
	for i, claim := range figureClaims {
		id := "f" + strconv.Itoa(i)
		code, unsupported := refusal(t, results[id])
		want := "ok"
		if claim.unsupported != nil {
			want = "POLICY_BLOCKED/unsupported_claim"
		}
		if code != want || !slices.Equal(unsupported, claim.unsupported) {
			t.Errorf("%s %q: the model saw %s %q, want %s %q", claim.resource, claim.evidence, code, unsupported, want, claim.unsupported)
		}
	}
	modelFindings := []string{"disk/pve1/sdb reliability disk-heat-level info active", "vm/103 performance app-memory-level info active"}
	published := []string{
		"opened vm/101 high_memory warning deterministic",
		"opened vm/103 app-memory-level info model",
		"opened disk/pve1/sdb disk-heat-level info model",
	}
	a := &patrolAttack{}
	a.Expect.ModelFindings, a.Expect.Published = &modelFindings, &published
	a.Expect.Stored = map[string]storedRow{
		"vm/103 performance app-memory-level": {Severity: "info", Source: "model", Status: "active",
			Title: "app-3 memory level", Evidence: "memory 41.40%"},
		"disk/pve1/sdb reliability disk-heat-level": {Severity: "info", Source: "model", Status: "active",
			Title: "sdb temperature", Evidence: "temperature 120°F"},
	}
	checkWhole(t, a, c, db, rep.RunID)
}

// refusal is the code ("ok" or "CODE/reason") of a fenced tool result
// and the claims its details name unsupported.
func refusal(t *testing.T, fenced string) (string, []string) {
	t.Helper()
	lines := strings.Split(fenced, "\n")
	if len(lines) < 3 {
		t.Fatalf("tool result not fenced: %q", fenced)
	}
	var res struct {
		Error *struct {
			Details struct {
				Unsupported []string `json:"unsupported"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(strings.Join(lines[1:len(lines)-1], "\n")), &res); err != nil {
		t.Fatalf("tool result is not JSON: %v\n%s", err, fenced)
	}
	if res.Error == nil {
		return resultCode(t, fenced), nil
	}
	return resultCode(t, fenced), res.Error.Details.Unsupported
}
