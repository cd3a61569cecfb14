package docs

import (
	"context"
	"strings"
	"testing"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/eval"
	"github.com/patrold/patrold/model"
)

// TestModelsReferenceTable: the reference models' table of MODELS.md is
// what an eval run of the shipped corpus gives, through the daemon's own
// composition of the model stages.
func TestModelsReferenceTable(t *testing.T) {
	doc := readDoc(t, "MODELS.md")
	const begin, end = "<!-- eval:reference -->\n", "<!-- /eval:reference -->"
	_, rest, ok := strings.Cut(doc, begin)
	table, _, ok2 := strings.Cut(rest, end)
	if !ok || !ok2 {
		t.Fatalf("MODELS.md has no %q ... %q block", begin, end)
	}
	scs, err := eval.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	root, err := daemon.NewRoot(&cfg, daemon.RootOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	em := root.EvalModel()
	open := func(ctx context.Context, path string) (eval.Store, error) { return em.OpenStore(ctx, path) }
	var results []*eval.Result
	for _, name := range eval.References {
		res, err := eval.Run(context.Background(), eval.Options{Scenarios: scs, Analyst: em.Analyst, OpenStore: open, Bars: eval.DefaultBars(),
			ProviderName: "script", ModelName: "reference:" + name, ContextTokens: em.ContextTokens, TempDir: t.TempDir(),
			Provider: func(sc *eval.Scenario) (model.Provider, error) { return eval.Reference(name, sc) }})
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
	}
	if want := eval.ReferenceTable(results); table != want {
		t.Fatalf("MODELS.md reference table is\n%s\nan eval run gives\n%s", table, want)
	}
}
