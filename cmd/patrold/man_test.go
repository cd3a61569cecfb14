package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// exitCodesOfCode returns the codes a command can exit with, read from
// the source: 0, and every constant exitCode returns.
func exitCodesOfCode(t *testing.T) []int {
	t.Helper()
	fset := token.NewFileSet()
	consts := map[string]int{}
	var returned []string
	for _, file := range []string{"main.go", "man_sections.go"} {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if lit, ok := n.Values[i].(*ast.BasicLit); ok && i < len(n.Values) && strings.HasPrefix(name.Name, "exit") {
						v, _ := strconv.Atoi(lit.Value)
						consts[name.Name] = v
					}
				}
			case *ast.FuncDecl:
				if n.Name.Name != "exitCode" {
					return false
				}
				ast.Inspect(n.Body, func(m ast.Node) bool {
					if r, ok := m.(*ast.ReturnStmt); ok {
						for _, e := range r.Results {
							id, ok := e.(*ast.Ident)
							if !ok {
								t.Fatalf("exitCode returns %T, not a named exit code", e)
							}
							returned = append(returned, id.Name)
						}
					}
					return true
				})
				return false
			}
			return true
		})
	}
	codes := []int{consts["exitOK"]}
	for _, name := range returned {
		v, ok := consts[name]
		if !ok {
			t.Fatalf("exitCode returns %s, not an exit constant", name)
		}
		codes = append(codes, v)
	}
	slices.Sort(codes)
	return slices.Compact(codes)
}

var manTH = regexp.MustCompile(`(?m)^\.TH "([^"]+)" "1"`)

// TestManPagesOfTheMainCommands: every page is headed by its own
// command; the main commands' pages have EXIT STATUS, FILES, ENVIRONMENT
// and EXAMPLES, and EXIT STATUS lists exactly the codes exitCode can
// give.
func TestManPagesOfTheMainCommands(t *testing.T) {
	dir := t.TempDir()
	c := newCLI(t, "")
	if out, code := c.run("man", "--dir", dir); code != 0 {
		t.Fatal(out)
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "*.1"))
	if len(pages) < 40 {
		t.Fatalf("%d pages", len(pages))
	}
	for _, p := range pages {
		body, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.ToUpper(strings.TrimSuffix(filepath.Base(p), ".1"))
		if m := manTH.FindSubmatch(body); m == nil || string(m[1]) != want {
			t.Errorf("%s: heading %q, want %q", filepath.Base(p), m, want)
		}
	}
	codes := exitCodesOfCode(t)
	if !slices.Equal(codes, []int{0, 1, 2}) {
		t.Logf("exit codes of the code: %v", codes)
	}
	listed := regexp.MustCompile(`(?m)^\.B (\d+)$`)
	main := []string{"patrold serve", "patrold run", "patrold findings", "patrold findings list", "patrold config check", "patrold status"}
	for _, cmd := range main {
		if _, ok := manExtras[cmd]; !ok {
			t.Errorf("%s has no manExtras entry", cmd)
		}
	}
	if len(manExtras) != len(main) {
		t.Errorf("manExtras has %d commands, the test knows %d", len(manExtras), len(main))
	}
	for _, cmd := range main {
		body, err := os.ReadFile(filepath.Join(dir, strings.ReplaceAll(cmd, " ", "-")+".1"))
		if err != nil {
			t.Fatal(err)
		}
		page := string(body)
		var sections []string
		for _, l := range strings.Split(page, "\n") {
			if s, ok := strings.CutPrefix(l, ".SH "); ok {
				sections = append(sections, s)
			}
		}
		for _, s := range []string{"EXIT STATUS", "FILES", "ENVIRONMENT", "EXAMPLES"} {
			if !slices.Contains(sections, s) {
				t.Errorf("%s: no %s section (has %q)", cmd, s, sections)
			}
		}
		exit := page[strings.Index(page, ".SH EXIT STATUS\n"):]
		exit = exit[:strings.Index(exit, "\n.SH ")]
		var got []int
		for _, m := range listed.FindAllStringSubmatch(exit, -1) {
			v, _ := strconv.Atoi(m[1])
			got = append(got, v)
		}
		if !slices.Equal(got, codes) {
			t.Errorf("%s: EXIT STATUS lists %v, the code exits with %v", cmd, got, codes)
		}
		for _, s := range []string{".B PATROLD_<SECTION>_<KEY>", ".B CREDENTIALS_DIRECTORY", ".I /etc/patrold/patrold.yaml", ".I <data_dir>/patrold.db"} {
			if !strings.Contains(page, s+"\n") {
				t.Errorf("%s: no %q", cmd, s)
			}
		}
	}
}
