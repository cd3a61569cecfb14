package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxPatrolFuncLines bounds a non-test function in patrol/: the run path
// reads as named stages, none a page long (issue 38).
const maxPatrolFuncLines = 80

// longFuncs lists "file:line name (n lines)" for every non-test function
// below root longer than max lines, braces included.
func longFuncs(root string, max int) ([]string, error) {
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			from, to := fset.Position(fd.Pos()), fset.Position(fd.End())
			if n := to.Line - from.Line + 1; n > max {
				out = append(out, fmt.Sprintf("%s:%d %s (%d lines)", path, from.Line, fd.Name.Name, n))
			}
		}
		return nil
	})
	return out, err
}

func TestPatrolFunctionsStayShort(t *testing.T) {
	long, err := longFuncs(filepath.Join("..", "..", "patrol"), maxPatrolFuncLines)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range long {
		t.Errorf("%s: split it into named steps (at most %d lines)", l, maxPatrolFuncLines)
	}
}

// The check finds a long function and passes a short one.
func TestLongFuncsBites(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\nfunc short() {}\n\nfunc long() {\n" + strings.Repeat("\tprintln()\n", 5) + "}\n"
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := longFuncs(dir, 6)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s:5 long (7 lines)", filepath.Join(dir, "p.go"))
	if len(got) != 1 || got[0] != want {
		t.Fatalf("longFuncs = %q, want [%q]", got, want)
	}
}
