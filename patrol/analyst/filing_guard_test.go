package analyst_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// modelTextFields are the Observation fields model text could reach.
var modelTextFields = map[string]bool{"Title": true, "Description": true, "Recommendation": true, "Evidence": true}

// filingViolations lists the Observation literals of the package's sources
// whose text fields take anything but what the filing path returned
// (texts[i], evidence) or the text of a finding already stored (f.Title,
// or prompt.Safe(f.Title, n)).
func filingViolations(t *testing.T, files map[string]string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	for name, src := range files {
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			sel, ok := lit.Type.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Observation" {
				return true
			}
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				key, _ := kv.Key.(*ast.Ident)
				if key == nil || !modelTextFields[key.Name] {
					continue
				}
				if !filed(kv.Value) {
					out = append(out, fset.Position(kv.Pos()).String()+": "+key.Name)
				}
			}
			return true
		})
	}
	return out
}

// filed reports an expression the filing path produced: texts[i] (the
// result of run.file), evidence (a verdict's filed evidence) or a field of
// a stored finding f.
func filed(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.IndexExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == "texts"
	case *ast.Ident:
		return x.Name == "evidence"
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == "f" && modelTextFields[x.Sel.Name]
	case *ast.CallExpr:
		// prompt.Safe(f.Title, n): a stored finding's text, built again.
		fn, ok := x.Fun.(*ast.SelectorExpr)
		if !ok || fn.Sel.Name != "Safe" || len(x.Args) == 0 {
			return false
		}
		arg, ok := x.Args[0].(*ast.SelectorExpr)
		return ok && filed(arg)
	}
	return false
}

func packageSources(t *testing.T) map[string]string {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = string(data)
	}
	if len(out) == 0 {
		t.Fatal("no sources")
	}
	return out
}

// TestOneFilingPath: no call site of the model stages stores model text
// but through run.file (normalise, ground, store what was checked).
func TestOneFilingPath(t *testing.T) {
	for _, v := range filingViolations(t, packageSources(t)) {
		t.Errorf("%s takes text that did not pass run.file", v)
	}
}

// The guard bites: a literal storing a raw argument is found.
func TestOneFilingPathGuardBites(t *testing.T) {
	src := "package analyst\nfunc x() { _ = findings.Observation{Title: prompt.Safe(args.Title, 9), Evidence: texts[3], Description: prompt.Safe(f.Description, 9)} }\n"
	if got := filingViolations(t, map[string]string{"x.go": src}); len(got) != 1 || !strings.HasSuffix(got[0], "Title") {
		t.Errorf("guard found %v, want the Title", got)
	}
}
