package docs

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
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

// barFlags reads the eval command's source: every flag bound to a field
// of the bars, as flag name to eval.Bars field name.
func barFlags(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "cmd", "patrold", "eval.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) < 2 {
			return true
		}
		ref, ok := call.Args[0].(*ast.UnaryExpr)
		if !ok || ref.Op != token.AND {
			return true
		}
		sel, ok := ref.X.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "bars" {
			return true
		}
		if lit, ok := call.Args[1].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			name, _ := strconv.Unquote(lit.Value)
			out[name] = sel.Sel.Name
		}
		return true
	})
	if len(out) == 0 {
		t.Fatal("cmd/patrold/eval.go binds no flag to the bars")
	}
	return out
}

var (
	docFlag        = regexp.MustCompile("`--([a-z-]+)(?: [A-Z]+)?`") // `--max-tokens N` too
	docFlagDefault = regexp.MustCompile("`--([a-z-]+)` \\(default ([^)]+)\\)")
)

// checkQualification reports where the Qualification section of
// MODELS.md differs from the code's bars: every bar flag is named, every
// default written is the code's, a bar with a non-zero default says it,
// and every flag named is a bar.
func checkQualification(doc string, flags map[string]string) []string {
	_, rest, _ := strings.Cut(doc, "### Qualification\n")
	sec, _, _ := strings.Cut(rest, "\n### ")
	if sec == "" {
		return []string{"MODELS.md: no \"### Qualification\" section"}
	}
	flat := strings.Join(strings.Fields(sec), " ") // prose wraps anywhere
	def := reflect.ValueOf(eval.DefaultBars())
	value := func(field string) string { return fmt.Sprint(def.FieldByName(field).Interface()) }
	var p []string
	written, named := map[string]string{}, map[string]bool{}
	for _, m := range docFlagDefault.FindAllStringSubmatch(flat, -1) {
		written[m[1]] = m[2]
	}
	for _, m := range docFlag.FindAllStringSubmatch(flat, -1) {
		named[m[1]] = true
	}
	names := make([]string, 0, len(flags))
	for name := range flags {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		field := flags[name]
		v, ok := written[name]
		switch {
		case !named[name]:
			p = append(p, fmt.Sprintf("MODELS.md: the bar --%s (eval.Bars.%s) is not named", name, field))
		case ok && v != value(field):
			p = append(p, fmt.Sprintf("MODELS.md: --%s says default %s, the code's is %s", name, v, value(field)))
		case !ok && !def.FieldByName(field).IsZero():
			p = append(p, fmt.Sprintf("MODELS.md: --%s does not give its default %s", name, value(field)))
		}
	}
	for _, m := range docFlag.FindAllStringSubmatch(flat, -1) {
		if _, ok := flags[m[1]]; !ok {
			p = append(p, fmt.Sprintf("MODELS.md: --%s is not a bar of patrold eval", m[1]))
		}
	}
	return p
}

// TestModelsQualificationBars: the bars MODELS.md lists, with their
// defaults, are the eval command's, both ways; a changed default or an
// extra flag in the doc is reported.
func TestModelsQualificationBars(t *testing.T) {
	doc := readDoc(t, "MODELS.md")
	flags := barFlags(t)
	if _, ok := flags["min-precision"]; !ok {
		t.Fatalf("patrold eval has no --min-precision bar: %v", flags)
	}
	if p := checkQualification(doc, flags); len(p) > 0 {
		t.Fatalf("%s", strings.Join(p, "\n"))
	}
	bad := strings.Replace(doc, "`--min-precision`\n  (default 0.8)", "`--min-precision`\n  (default 0.5)", 1)
	bad = strings.Replace(bad, "`--max-unsupported`", "`--max-duplicates`", 1)
	want := []string{
		"MODELS.md: the bar --max-unsupported (eval.Bars.MaxUnsupported) is not named",
		"MODELS.md: --min-precision says default 0.5, the code's is 0.8",
		"MODELS.md: --max-duplicates is not a bar of patrold eval",
	}
	if got := checkQualification(bad, flags); !slices.Equal(got, want) {
		t.Fatalf("an edited doc reports\n%q\nwant\n%q", got, want)
	}
}
