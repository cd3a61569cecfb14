package agent

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// codeLike matches string literals shaped like a structured code.
var codeLike = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$`)

// checkCodes parses the package's non-test sources (file name -> text)
// and reports:
//  1. code-shaped string literals outside const declarations that are not
//     declared codes;
//  2. string literals given where a Code is expected (composite literal
//     field Code, or a Code(...) conversion);
//  3. declared codes never referenced outside the declaring file.
func checkCodes(files map[string]string) []string {
	fset := token.NewFileSet()
	parsed := map[string]*ast.File{}
	for name, src := range files {
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			return []string{err.Error()}
		}
		parsed[name] = f
	}
	declared := map[string]string{} // identifier -> value
	declFile := ""
	constValues := map[string]bool{}
	for name, f := range parsed {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, _ := strconv.Unquote(lit.Value)
					constValues[v] = true
					if t, ok := vs.Type.(*ast.Ident); ok && t.Name == "Code" {
						declared[id.Name] = v
						declFile = name
					}
				}
			}
		}
	}
	var problems []string
	if len(declared) == 0 {
		return []string{"no constants of type Code declared"}
	}
	values := map[string]bool{}
	for _, v := range declared {
		values[v] = true
	}
	used := map[string]bool{}
	for name, f := range parsed {
		inConst := map[ast.Node]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if gd, ok := n.(*ast.GenDecl); ok && gd.Tok == token.CONST {
				ast.Inspect(gd, func(m ast.Node) bool { inConst[m] = true; return true })
				return false
			}
			switch x := n.(type) {
			case *ast.BasicLit:
				if x.Kind != token.STRING || inConst[x] {
					return true
				}
				v, _ := strconv.Unquote(x.Value)
				if codeLike.MatchString(v) && len(v) > 2 && !values[v] && !constValues[v] {
					problems = append(problems, fmt.Sprintf("%s: emits undeclared code %q", fset.Position(x.Pos()), v))
				}
			case *ast.KeyValueExpr:
				if k, ok := x.Key.(*ast.Ident); ok && k.Name == "Code" {
					if lit, ok := x.Value.(*ast.BasicLit); ok {
						problems = append(problems, fmt.Sprintf("%s: Code given as literal %s, use a declared constant", fset.Position(lit.Pos()), lit.Value))
					}
				}
			case *ast.CallExpr:
				if fn, ok := x.Fun.(*ast.Ident); ok && fn.Name == "Code" && len(x.Args) == 1 {
					if lit, ok := x.Args[0].(*ast.BasicLit); ok {
						problems = append(problems, fmt.Sprintf("%s: Code(%s) conversion, use a declared constant", fset.Position(lit.Pos()), lit.Value))
					}
				}
			case *ast.Ident:
				if name != declFile {
					if _, ok := declared[x.Name]; ok {
						used[x.Name] = true
					}
				}
			}
			return true
		})
	}
	for id, v := range declared {
		if !used[id] {
			problems = append(problems, fmt.Sprintf("declared code %s (%s) is never used outside %s", id, v, declFile))
		}
	}
	sort.Strings(problems)
	return problems
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
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = string(b)
	}
	return out
}

func TestCodesContract(t *testing.T) {
	src := packageSources(t)
	for _, p := range checkCodes(src) {
		t.Error(p)
	}
	// Every declared code is in the manifest catalogue, once.
	seen := map[Code]bool{}
	for _, c := range Codes() {
		if seen[c.Code] || c.Description == "" {
			t.Errorf("catalogue entry %+v duplicated or undescribed", c)
		}
		seen[c.Code] = true
	}
	if len(seen) != 16 {
		t.Errorf("catalogue has %d codes", len(seen))
	}
}

// TestCodesContractCatchesMutations proves the checker fails when the code
// changes under it.
func TestCodesContractCatchesMutations(t *testing.T) {
	src := packageSources(t)
	mutations := map[string]func(map[string]string){
		"undeclared literal": func(m map[string]string) {
			m["zz_mut.go"] = "package agent\n\nvar _ = &ToolError{Code: CodeNotFound, Message: \"x\"}\nvar _ = \"RATE_LIMITED\"\n"
		},
		"literal code field": func(m map[string]string) {
			m["zz_mut.go"] = "package agent\n\nvar _ = &ToolError{Code: \"NOT_FOUND\"}\n"
		},
		"conversion": func(m map[string]string) {
			m["zz_mut.go"] = "package agent\n\nvar _ = Code(\"NOT_FOUND\")\n"
		},
		"unused declared code": func(m map[string]string) {
			m["codes.go"] = strings.Replace(m["codes.go"], "\tCodeLookFirst         Code = \"LOOK_FIRST\"\n",
				"\tCodeLookFirst         Code = \"LOOK_FIRST\"\n\tCodeRateLimited       Code = \"RATE_LIMITED\"\n", 1)
		},
	}
	for name, mutate := range mutations {
		m := map[string]string{}
		for k, v := range src {
			m[k] = v
		}
		mutate(m)
		if len(checkCodes(m)) == 0 {
			t.Errorf("%s: the contract check did not notice", name)
		}
	}
}
