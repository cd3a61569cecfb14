package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/patrol/analyst"
	"github.com/patrold/patrold/store"
)

var update = flag.Bool("update", false, "rewrite the golden results")

// testAnalyst builds the model stages as the daemon does, on reg.
func testAnalyst(p model.Provider, reg prometheus.Registerer) (patrol.Analyst, error) {
	am, err := agent.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	return analyst.New(analyst.Options{Provider: p, Registerer: reg, AgentMetrics: am})
}

func openStore(ctx context.Context, path string) (Store, error) { return store.Open(ctx, path) }

func referenceOptions(t *testing.T, name string) Options {
	t.Helper()
	scs, err := Corpus()
	if err != nil {
		t.Fatal(err)
	}
	fixed := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	return Options{
		Scenarios: scs, Analyst: testAnalyst, OpenStore: openStore, ProviderName: "script", ModelName: "reference:" + name,
		Provider: func(sc *Scenario) (model.Provider, error) { return Reference(name, sc) },
		Bars:     DefaultBars(), TempDir: t.TempDir(), Clock: func() time.Time { return fixed },
	}
}

// TestReferenceModels: the perfect, lazy and noisy models over the shipped
// corpus give exactly the golden results (the whole JSON document), and
// their headline figures are the ones docs/MODELS.md reads.
func TestReferenceModels(t *testing.T) {
	one := func(x float64) *float64 { return &x }
	type figs struct {
		Recall, Precision *float64
		Unsupported       int
		Refused           int
		Passed            bool
	}
	want := map[string]figs{
		RefPerfect: {Recall: one(1), Precision: one(1), Passed: true},
		RefLazy:    {Recall: one(0), Precision: nil},
		RefNoisy:   {Recall: one(0), Precision: one(0), Unsupported: 43, Refused: 43},
	}
	for _, name := range References {
		t.Run(name, func(t *testing.T) {
			res, err := Run(context.Background(), referenceOptions(t, name))
			if err != nil {
				t.Fatal(err)
			}
			o := res.Overall
			got := figs{Recall: o.Recall, Precision: o.Precision, Unsupported: o.UnsupportedFiled, Refused: o.RefusedClaims, Passed: res.Qualification.Passed}
			if !reflect.DeepEqual(got, want[name]) {
				t.Errorf("%s: %+v, want %+v", name, got, want[name])
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetIndent("", "  ")
			if err := enc.Encode(res); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "reference-"+name+".json")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("result differs from %s (go test ./eval -run TestReferenceModels -update):\n%s", golden, buf.String())
			}
		})
	}
}

// TestQualifyBars: each bar fails the qualification on its own, with a
// failure naming it; a result that reaches every bar passes.
func TestQualifyBars(t *testing.T) {
	r := func(x float64) *float64 { return &x }
	run := Figures{Recall: r(0.9), StatusReasons: []string{}, Counts: Counts{Signals: 10, FiledByModel: 9, InputTokens: 900, OutputTokens: 100, LargestRequestTokens: 5000}}
	base := func() *Result {
		return &Result{Scenarios: []ScenarioResult{{Name: "s", Runs: []Figures{run}}},
			Overall: Overall{Recall: r(0.9), RecallSpread: &Spread{Mean: 0.9, Min: 0.9, Max: 0.9}, PrecisionSpread: &Spread{Mean: 0.8, Min: 0.8, Max: 0.8}}}
	}
	bars := Options{Bars: Bars{MinRecall: 0.8, MinPrecision: 0.8, MaxTokensPerRun: 1000}, ContextTokens: 8192}
	if q := qualify(base(), bars); !reflect.DeepEqual(q, Qualification{Passed: true, Failures: []string{}}) {
		t.Fatalf("passing result: %+v", q)
	}
	cases := []struct {
		name string
		edit func(*Result, *Options)
		want string
	}{
		{"recall", func(x *Result, _ *Options) { x.Overall.RecallSpread = &Spread{Mean: 0.85, Min: 0.7, Max: 1} }, "recall 0.7 is below the bar 0.8"},
		{"precision", func(x *Result, _ *Options) { x.Overall.PrecisionSpread = &Spread{Mean: 0.9, Min: 0.75, Max: 1} }, "precision 0.75 is below the bar 0.8"},
		{"unsupported", func(x *Result, _ *Options) { x.Overall.UnsupportedFiled = 1 }, "1 unsupported findings filed, the bar is at most 0"},
		{"budget", func(x *Result, _ *Options) { x.Scenarios[0].Runs[0].StatusReasons = []string{"budget_exhausted"} }, "s (run 1): the budget ran out (budget_exhausted)"},
		{"tokens", func(x *Result, _ *Options) { x.Scenarios[0].Runs[0].OutputTokens = 101 }, "s (run 1): 1001 tokens, the bar is at most 1000 per run"},
		{"context", func(_ *Result, o *Options) { o.ContextTokens = 4096 }, "s (run 1): a request of 5000 tokens exceeds context_tokens 4096"},
	}
	for _, c := range cases {
		res, o := base(), bars
		c.edit(res, &o)
		if q := qualify(res, o); !reflect.DeepEqual(q, Qualification{Failures: []string{c.want}}) {
			t.Errorf("%s: %+v, want the one failure %q", c.name, q, c.want)
		}
	}
}
