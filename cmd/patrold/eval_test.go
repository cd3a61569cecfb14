package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/patrold/patrold/eval"
	"github.com/patrold/patrold/patrol"
)

// evalDir copies the named corpus scenarios into a directory of their own.
func evalDir(t *testing.T, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join("..", "..", "eval", "scenarios", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestEvalCommand: a qualifying model exits 0, one that misses a bar
// exits 1 after printing its result, bad usage exits 2, and compare reads
// both results back; the data_dir is never touched.
func TestEvalCommand(t *testing.T) {
	c := newCLI(t, "")
	dir := evalDir(t, "06-storage-critical.yaml", "01-quiet-small.yaml")
	perfect, _, code := c.run3("eval", "--scenarios", dir, "--reference", "perfect", "--output", "json")
	if code != 0 {
		t.Fatalf("perfect: exit %d\n%s", code, perfect)
	}
	var res eval.Result
	if err := json.Unmarshal([]byte(perfect), &res); err != nil {
		t.Fatal(err)
	}
	one, none := 1.0, 0.0 // the scripted model keeps no prompt cache
	wantOverall := eval.Overall{Scenarios: 2, Runs: 2, Recall: &one, RecallSpread: &eval.Spread{Mean: 1, Min: 1, Max: 1}, Precision: &one,
		PrecisionSpread: &eval.Spread{Mean: 1, Min: 1, Max: 1}, CachedShare: &none,
		Counts: eval.Counts{Signals: 1, FiledByModel: 1, ModelFindings: 1, Supported: 1}}
	got := res.Overall
	got.Turns, got.Requests, got.InputTokens, got.OutputTokens, got.WallMS, got.LargestRequestTokens = 0, 0, 0, 0, 0, 0
	got.LaterInputTokens = 0
	if !reflect.DeepEqual(got, wantOverall) || res.Provider != "script" || res.Model != "reference:perfect" || res.ContextTokens != 128000 ||
		!reflect.DeepEqual(res.Qualification, eval.Qualification{Passed: true, Failures: []string{}}) {
		t.Fatalf("perfect: %+v %+v", res.Overall, res.Qualification)
	}
	lazy, errOut, code := c.run3("eval", "--scenarios", dir, "--reference", "lazy", "--output", "json")
	if code != 1 || !strings.Contains(errOut, "the model does not qualify: recall 0 is below the bar 0.8") || !strings.Contains(lazy, `"passed": false`) {
		t.Fatalf("lazy: exit %d %q\n%s", code, errOut, lazy)
	}
	if out, _, code := c.run3("eval", "--scenarios", dir, "--reference", "lazy", "--min-recall", "0"); code != 0 || !strings.Contains(out, "qualified: recall >= 0") {
		t.Fatalf("lazy with no recall bar: exit %d\n%s", code, out)
	}
	a, b := filepath.Join(c.dir, "a.json"), filepath.Join(c.dir, "b.json")
	os.WriteFile(a, []byte(perfect), 0o600)
	os.WriteFile(b, []byte(lazy), 0o600)
	out, _, code := c.run3("eval", "compare", a, b)
	if code != 0 || !strings.Contains(out, "A script/reference:perfect") || !strings.Contains(out, "recall storage-critical  1.00") {
		t.Fatalf("compare: exit %d\n%s", code, out)
	}
	out, _, code = c.run3("eval", "compare", a, b, "--output", "json")
	var cmp eval.Comparison
	if code != 0 || json.Unmarshal([]byte(out), &cmp) != nil || cmp.A.Qualified != true || cmp.B.Qualified != false || len(cmp.Scenarios) != 2 {
		t.Fatalf("compare json: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "var", "patrold.db")); !os.IsNotExist(err) {
		t.Fatalf("eval touched the data_dir: %v", err)
	}
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"eval"}, "model.provider is none: there is no model to qualify"},
		{[]string{"eval", "--reference", "genius"}, `--reference: reference: "genius" is not one of [perfect lazy noisy]`},
		{[]string{"eval", "--reference", "lazy", "--repeat", "0"}, "--repeat: 0 is outside 1..100"},
		{[]string{"eval", "--reference", "lazy", "--min-recall", "2"}, "min_recall: 2 is outside 0..1"},
		{[]string{"eval", "--reference", "lazy", "--min-precision", "-0.1"}, "min_precision: -0.1 is outside 0..1"},
		{[]string{"eval", "--scenarios", filepath.Join(c.dir, "nowhere")}, "--scenarios: stat "},
		{[]string{"eval", "--scenarios", t.TempDir()}, "--scenarios: scenarios: no *.yaml file"},
		{[]string{"eval", "--scenarios", c.dir}, "--scenarios: patrold.yaml: scenario: "},
		{[]string{"eval", "compare", a, filepath.Join(c.dir, "patrold.yaml")}, "not an eval result"},
	} {
		if _, errOut, code := c.run3(tc.argv...); code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", tc.argv, code, errOut, tc.want)
		}
	}
}

// TestRunReportNamesTheModel: a model-analysed run's report names the
// provider and model; a deterministic one names none.
func TestRunReportNamesTheModel(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(script, []byte("turns:\n  - text: \"Done.\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for cfg, want := range map[string]*patrol.ModelRef{
		"model: {provider: script, script: {path: " + script + "}}\n": {Provider: "script", Model: "script"},
		"": nil,
	} {
		c := newCLI(t, cfg)
		out, _, code := c.run3("run", "--snapshot", "../../examples/small-faults.json", "--output", "json")
		var rep patrol.Report
		if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || !reflect.DeepEqual(rep.Model, want) {
			t.Errorf("%q: exit %d, model %+v, want %+v", cfg, code, rep.Model, want)
		}
	}
}
