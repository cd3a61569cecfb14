package api

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

// checkCodes parses the package's non-test sources (name -> text) and
// reports:
//  1. declared codes never referenced outside codes.go;
//  2. string literals outside codes.go equal to a declared code's value (a
//     code must be emitted through its constant);
//  3. Code(...) conversions outside codes.go (a way to emit an undeclared
//     code).
func checkCodes(files map[string]string) []string {
	fset := token.NewFileSet()
	declared := map[string]string{} // identifier -> value
	parsed := map[string]*ast.File{}
	for name, src := range files {
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			return []string{err.Error()}
		}
		parsed[name] = f
		if name != "codes.go" {
			continue
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if t, ok := vs.Type.(*ast.Ident); !ok || t.Name != "Code" {
					continue
				}
				for i, id := range vs.Names {
					v, _ := strconv.Unquote(vs.Values[i].(*ast.BasicLit).Value)
					declared[id.Name] = v
				}
			}
		}
	}
	values := map[string]string{}
	for id, v := range declared {
		values[v] = id
	}
	used := map[string]bool{}
	var problems []string
	for name, f := range parsed {
		if name == "codes.go" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.Ident:
				if _, ok := declared[x.Name]; ok {
					used[x.Name] = true
				}
			case *ast.BasicLit:
				if x.Kind == token.STRING {
					v, _ := strconv.Unquote(x.Value)
					if id, ok := values[v]; ok {
						problems = append(problems, fmt.Sprintf("%s: literal %q instead of %s", fset.Position(x.Pos()), v, id))
					}
				}
			case *ast.CallExpr:
				if id, ok := x.Fun.(*ast.Ident); ok && id.Name == "Code" {
					problems = append(problems, fmt.Sprintf("%s: Code(...) conversion emits an undeclared code", fset.Position(x.Pos())))
				}
			}
			return true
		})
	}
	for id := range declared {
		if !used[id] {
			problems = append(problems, "declared code "+id+" is never emitted")
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
	files := map[string]string{}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		files[n] = string(data)
	}
	return files
}

func TestCodesDeclaredAndEmitted(t *testing.T) {
	files := packageSources(t)
	if p := checkCodes(files); len(p) > 0 {
		t.Fatalf("code contract broken:\n%s", strings.Join(p, "\n"))
	}
	if len(Codes()) != len(codeCatalogue) {
		t.Fatal("Codes() does not return the catalogue")
	}
	seen := map[Code]bool{}
	for _, c := range codeCatalogue {
		if seen[c.Code] || c.Status < 400 || c.Description == "" {
			t.Errorf("catalogue entry %+v duplicated or incomplete", c)
		}
		seen[c.Code] = true
	}
}

// TestCodesGuardFailsOnDrift shows the contract test catches both
// directions: an undeclared literal and a declared code nobody emits.
func TestCodesGuardFailsOnDrift(t *testing.T) {
	files := packageSources(t)
	mutated := map[string]string{}
	for k, v := range files {
		mutated[k] = v
	}
	mutated["runs.go"] = strings.Replace(files["runs.go"], "CodePatrolAlreadyRunning", `Code("patrol_busy")`, 1)
	p := strings.Join(checkCodes(mutated), "\n")
	if !strings.Contains(p, "Code(...) conversion") || !strings.Contains(p, "CodePatrolAlreadyRunning is never emitted") {
		t.Fatalf("guard missed the drift:\n%s", p)
	}
	mutated["runs.go"] = strings.Replace(files["runs.go"], "CodePatrolAlreadyRunning", `"patrol_already_running"`, 1)
	if p := strings.Join(checkCodes(mutated), "\n"); !strings.Contains(p, `literal "patrol_already_running"`) {
		t.Fatalf("guard missed a code literal:\n%s", p)
	}
}

var docCode = regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([0-9]{3}) \\|")

// TestAPIDocMatchesCode keeps docs/API.md true to the route table and the
// code catalogue, in both directions for the codes.
func TestAPIDocMatchesCode(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "API.md"))
	if err != nil {
		t.Fatalf("docs/API.md: %v", err)
	}
	if p := checkDoc(string(data), (&API{}).routes(), codeCatalogue); len(p) > 0 {
		t.Fatalf("docs/API.md drifted from the code:\n%s", strings.Join(p, "\n"))
	}
	// The guard fails when the doc loses a route or a code.
	broken := strings.Replace(string(data), "POST /-/reload", "POST /reload", -1)
	broken = strings.Replace(broken, "| `approval_expired` |", "| `approval_gone` |", 1)
	p := strings.Join(checkDoc(broken, (&API{}).routes(), codeCatalogue), "\n")
	if !strings.Contains(p, "POST /-/reload") || !strings.Contains(p, "approval_gone") || !strings.Contains(p, "approval_expired") {
		t.Fatalf("doc guard missed the drift:\n%s", p)
	}
}

func checkDoc(doc string, routes []route, codes []CodeInfo) []string {
	var p []string
	for _, r := range routes {
		if !strings.Contains(doc, "`"+r.pattern+"`") {
			p = append(p, "route "+r.pattern+" is not documented")
		}
	}
	documented := map[string]string{}
	for _, m := range docCode.FindAllStringSubmatch(doc, -1) {
		documented[m[1]] = m[2]
	}
	for _, c := range codes {
		st, ok := documented[string(c.Code)]
		switch {
		case !ok:
			p = append(p, "code "+string(c.Code)+" is not in the error code table")
		case st != strconv.Itoa(c.Status):
			p = append(p, "code "+string(c.Code)+" documented with status "+st)
		}
		delete(documented, string(c.Code))
	}
	for c := range documented {
		p = append(p, "documented code "+c+" is not declared")
	}
	sort.Strings(p)
	return p
}
