package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/patrold/patrold/eval"
)

// inflationCall is one report_finding on vm/101 of the high-memory-vm
// scenario (memory 91 %, the net's high_memory warning).
func inflationCall(id, key, severity string) string {
	return `      - {id: ` + id + `, name: report_finding, arguments: {resource_id: vm/101, category: performance, key: ` + key +
		`, severity: ` + severity + `, title: "Database guest is short of memory", evidence: "memory_percent 91"}}` + "\n"
}

// watchScenario: the net finds nothing on a healthy guest; the ground
// truth holds one watch of the model's own, a quantity detection does not
// measure.
const watchScenario = `name: model-only-watch
description: A healthy guest whose notes tell of a batch job; a watch at most.
snapshot:
  version: 1
  taken_at: "2026-11-29T06:00:00Z"
  resources:
    - {id: node/pve1, kind: node, name: pve1, status: online, metrics: {cpu_percent: 25, memory_percent: 60}}
    - {id: vm/101, kind: vm, name: db, parent: node/pve1, status: running, reachable: true,
       notes: "the nightly batch shares this guest's disk",
       metrics: {cpu_percent: 22, memory_percent: 41, disk_percent: 44},
       backup: {last_status: ok, last_finished_at: "2026-11-29T02:00:00Z", last_success_at: "2026-11-29T02:00:00Z"}}
expect:
  signals: []
  findings:
    - {resource_id: vm/101, category: performance, key: batch-contention, severity: watch,
       title: "The nightly batch shares the database's disk", evidence: "the notes say the nightly batch shares this guest's disk"}
`

// TestEvalScoresInflation: a fully compliant scripted model, configured
// as the model to qualify, files the expected finding with duplicates or
// above the measurement. `patrold eval` scores those against precision
// and refuses to qualify it (issue 37 item 6). Before the precision rules
// the first model scored recall 1.00, precision 1.00 and qualified.
func TestEvalScoresInflation(t *testing.T) {
	memory := evalDir(t, "04-high-memory-vm.yaml")
	watch := t.TempDir()
	if err := os.WriteFile(filepath.Join(watch, "watch.yaml"), []byte(watchScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	r := func(x float64) *float64 { return &x }
	one := &eval.Spread{Mean: 1, Min: 1, Max: 1}
	memoryRun := eval.Counts{Signals: 1, FiledByModel: 1, Turns: 3, Requests: 3}
	cases := []struct {
		name, dir, scenario, file, read string
		calls                           string
		counts                          eval.Counts
		recall                          *float64
		precision                       float64
		failure                         string
	}{
		// Critical duplicates under keys of its own are refused at filing
		// now (above the measured warning: docs/MODEL_STAGES.md); warning
		// ones are filed, and eval scores them.
		{"warning-plus-two-warning-duplicates", memory, "high-memory-vm", "04-high-memory-vm.yaml", "vm/101",
			inflationCall("f1", "high_memory", "warning") + inflationCall("f2", "memory-pressure", "warning") + inflationCall("f3", "oom-risk", "warning"),
			with(memoryRun, eval.Counts{ModelFindings: 3, Supported: 1, Duplicates: 2}), r(1), 0.3333, "precision 0.3333 is below the bar 0.8"},
		{"warning-plus-one-warning-duplicate", memory, "high-memory-vm", "04-high-memory-vm.yaml", "vm/101",
			inflationCall("f1", "high_memory", "warning") + inflationCall("f2", "memory-pressure", "warning"),
			with(memoryRun, eval.Counts{ModelFindings: 2, Supported: 1, Duplicates: 1}), r(1), 0.5, "precision 0.5 is below the bar 0.8"},
		{"warning-on-an-expected-watch", watch, "model-only-watch", "watch.yaml", "vm/101",
			`      - {id: f1, name: report_finding, arguments: {resource_id: vm/101, category: performance, key: batch-contention, severity: warning,` +
				` title: "The nightly batch shares the database's disk", evidence: "the notes say the nightly batch shares this guest's disk"}}` + "\n",
			eval.Counts{ModelFindings: 1, AboveMeasurement: 1, Turns: 3, Requests: 3}, nil, 0, "precision 0 is below the bar 0.8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			script := filepath.Join(t.TempDir(), "script.yaml")
			doc := "turns:\n  - tool_calls:\n      - {id: r1, name: get_resource, arguments: {id: " + tc.read + "}}\n  - tool_calls:\n" + tc.calls + "  - text: \"Done.\"\n"
			if err := os.WriteFile(script, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			c := newCLI(t, "model: {provider: script, script: {path: "+script+"}}\n")
			out, errOut, code := c.run3("eval", "--scenarios", tc.dir, "--output", "json")
			want := "the model does not qualify: " + tc.failure
			if code != 1 || errOut != want {
				t.Fatalf("exit %d, stderr %q, want 1 and %q\n%s", code, errOut, want, out)
			}
			var got eval.Result
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			// Tokens and wall time follow prompt wording and the machine;
			// the run's status follows the net's handling of the model's
			// severities, not eval's scoring.
			zero := func(f *eval.Figures) {
				f.InputTokens, f.OutputTokens, f.LargestRequestTokens, f.WallMS, f.Status = 0, 0, 0, 0, ""
				f.LaterInputTokens, f.CachedShare = 0, nil
			}
			got.Overall.InputTokens, got.Overall.OutputTokens, got.Overall.LargestRequestTokens, got.Overall.WallMS = 0, 0, 0, 0
			got.Overall.LaterInputTokens, got.Overall.CachedShare = 0, nil
			for i := range got.Scenarios {
				for j := range got.Scenarios[i].Runs {
					zero(&got.Scenarios[i].Runs[j])
				}
			}
			var recallSpread *eval.Spread
			if tc.recall != nil {
				recallSpread = one
			}
			prec := &eval.Spread{Mean: tc.precision, Min: tc.precision, Max: tc.precision}
			run := eval.Figures{StatusReasons: []string{}, Missed: []eval.SignalRef{}, Recall: tc.recall, Precision: r(tc.precision), Counts: tc.counts}
			wantRes := eval.Result{Version: eval.ResultVersion, Provider: "script", Model: "script", ContextTokens: 128000, Repeat: 1, Bars: eval.DefaultBars(),
				Scenarios: []eval.ScenarioResult{{Name: tc.scenario, File: tc.file, Runs: []eval.Figures{run}, Recall: recallSpread, Precision: prec}},
				Overall: eval.Overall{Scenarios: 1, Runs: 1, Recall: tc.recall, RecallSpread: recallSpread, Precision: r(tc.precision), PrecisionSpread: prec,
					Counts: tc.counts},
				Qualification: eval.Qualification{Failures: []string{tc.failure}}}
			if !reflect.DeepEqual(got, wantRes) {
				g, _ := json.MarshalIndent(got, "", "  ")
				w, _ := json.MarshalIndent(wantRes, "", "  ")
				t.Fatalf("result\n%s\nwant\n%s", g, w)
			}
			text, _, code := c.run3("eval", "--scenarios", tc.dir)
			tail := "NOT qualified:\n  " + tc.failure + "\n"
			if code != 1 || !strings.HasSuffix(text, tail) {
				t.Fatalf("text: exit %d, want 1 and the tail %q:\n%s", code, tail, text)
			}
			// The scenario's row up to the turns (tokens and wall time vary).
			recall := "-"
			if tc.recall != nil {
				recall = fmt.Sprintf("%.2f", *tc.recall)
			}
			cn := tc.counts
			wantRow := []string{tc.scenario, strconv.Itoa(cn.Signals), strconv.Itoa(cn.Held), strconv.Itoa(cn.FiledByModel), recall, strconv.Itoa(cn.ModelFindings),
				fmt.Sprintf("%.2f", tc.precision), "0", strconv.Itoa(cn.Duplicates), strconv.Itoa(cn.AboveMeasurement), "0", "0", "3"}
			var row []string
			for _, l := range strings.Split(text, "\n") {
				if f := strings.Fields(l); len(f) >= len(wantRow) && f[0] == tc.scenario {
					row = f[:len(wantRow)]
				}
			}
			if !slices.Equal(row, wantRow) {
				t.Fatalf("text row %q, want %q:\n%s", row, wantRow, text)
			}
		})
	}
}

// with returns a carrying b's finding counts.
func with(a, b eval.Counts) eval.Counts {
	a.ModelFindings, a.Supported, a.Duplicates, a.AboveMeasurement = b.ModelFindings, b.Supported, b.Duplicates, b.AboveMeasurement
	return a
}
