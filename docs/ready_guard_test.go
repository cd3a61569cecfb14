package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// readyConditions are the conditions daemon/ready.go can report, read
// from its source: the first argument of each add call, and the string
// a condition variable is set to.
func readyConditions(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../daemon/ready.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	lit := func(e ast.Expr) {
		if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
			if s, err := strconv.Unquote(b.Value); err == nil {
				out = append(out, s)
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "add" && len(n.Args) > 0 {
				lit(n.Args[0])
			}
		case *ast.AssignStmt:
			if id, ok := n.Lhs[0].(*ast.Ident); ok && id.Name == "cond" && len(n.Rhs) == 1 {
				lit(n.Rhs[0])
			}
		}
		return true
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// TestReadyConditionsDocumented: OPERATIONS.md explains every readiness
// condition in a bullet of its own, and API.md's status table lists
// exactly the conditions the code reports.
func TestReadyConditionsDocumented(t *testing.T) {
	have := readyConditions(t)
	if len(have) < 10 {
		t.Fatalf("read %d conditions from daemon/ready.go: %v", len(have), have)
	}
	ops := readDoc(t, "OPERATIONS.md")
	for _, c := range have {
		if !regexp.MustCompile("(?m)^ +- `" + c + "`").MatchString(ops) {
			t.Errorf("docs/OPERATIONS.md \"What to watch\" has no bullet for the readiness condition %s", c)
		}
	}
	api := readDoc(t, "API.md")
	row := regexp.MustCompile("(?m)^\\| `ready`, `unready` \\|.*$").FindString(api)
	if row == "" {
		t.Fatal("docs/API.md has no `ready`, `unready` row")
	}
	_, list, _ := strings.Cut(row, "(`[]` when ready):")
	list, _, _ = strings.Cut(list, ";")
	var documented []string
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(list, -1) {
		documented = append(documented, m[1])
	}
	slices.Sort(documented)
	if !slices.Equal(documented, have) {
		t.Errorf("docs/API.md lists the readiness conditions\n %v\nthe code reports\n %v", documented, have)
	}
}

// TestReplicaFieldsDocumented: API.md's replica row names every JSON
// field of cluster.Lag, read from its struct tags.
func TestReplicaFieldsDocumented(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../cluster/follower.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Lag" {
			return true
		}
		for _, fl := range ts.Type.(*ast.StructType).Fields.List {
			if fl.Tag == nil {
				continue
			}
			tag, _ := strconv.Unquote(fl.Tag.Value)
			if m := regexp.MustCompile(`json:"([a-z_]+)`).FindStringSubmatch(tag); m != nil {
				fields = append(fields, m[1])
			}
		}
		return false
	})
	if len(fields) < 10 {
		t.Fatalf("read %d fields of cluster.Lag: %v", len(fields), fields)
	}
	row := regexp.MustCompile("(?m)^\\| `replica` \\|.*$").FindString(readDoc(t, "API.md"))
	if row == "" {
		t.Fatal("docs/API.md has no `replica` row")
	}
	for _, f := range fields {
		if !strings.Contains(row, "`"+f+"`") {
			t.Errorf("docs/API.md's replica row does not name the field %s", f)
		}
	}
}
