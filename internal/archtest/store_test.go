package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// storeModule is the module whose packages the store rule checks, and
// storePackage the one package allowed to reach SQL.
const (
	storeModule  = "github.com/patrold/patrold"
	storePackage = storeModule + "/store"
)

// storeListed is what the store rule reads of one `go list -json` package.
type storeListed struct {
	ImportPath string
	Imports    []string // non-test imports
}

// storeGoList lists the packages matching pattern in dir, with the
// imports of their non-test files.
func storeGoList(t *testing.T, dir, pattern string) []storeListed {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", pattern)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pattern, err, stderr.String())
	}
	var pkgs []storeListed
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p storeListed
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list %s listed no package", pattern)
	}
	return pkgs
}

// sqlImportViolations names every package but allowed (and the packages
// under it) whose non-test
// files import database/sql (or its driver interface), sorted.
func sqlImportViolations(pkgs []storeListed, allowed string) []string {
	var out []string
	for _, p := range pkgs {
		if p.ImportPath == allowed || strings.HasPrefix(p.ImportPath, allowed+"/") {
			continue // the store and its own subpackages (storetest)
		}
		for _, imp := range p.Imports {
			if imp == "database/sql" || strings.HasPrefix(imp, "database/sql/") {
				out = append(out, fmt.Sprintf("%s imports %s", p.ImportPath, imp))
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestOnlyStoreImportsSQL: the store owns the database; every other
// package reaches it through the store's typed methods.
func TestOnlyStoreImportsSQL(t *testing.T) {
	pkgs := storeGoList(t, ".", storeModule+"/...")
	if !slices.ContainsFunc(pkgs, func(p storeListed) bool { return p.ImportPath == storePackage }) {
		t.Fatalf("%s is not among the listed packages", storePackage)
	}
	if got := sqlImportViolations(pkgs, storePackage); len(got) != 0 {
		t.Fatalf("only %s may import database/sql outside tests:\n%s", storePackage, strings.Join(got, "\n"))
	}
}

// TestSQLRuleCatchesAViolation: the checker reports a package importing
// database/sql, and not the store, its tests or packages without SQL.
func TestSQLRuleCatchesAViolation(t *testing.T) {
	graph := []storeListed{
		{ImportPath: storePackage, Imports: []string{"context", "database/sql"}},
		{ImportPath: storeModule + "/api", Imports: []string{"context", "database/sql", "net/http"}},
		{ImportPath: storeModule + "/assistant", Imports: []string{"database/sql/driver"}},
		{ImportPath: storeModule + "/findings", Imports: []string{"time"}},
	}
	want := []string{storeModule + "/api imports database/sql", storeModule + "/assistant imports database/sql/driver"}
	if got := sqlImportViolations(graph, storePackage); !slices.Equal(got, want) {
		t.Fatalf("violations = %q, want %q", got, want)
	}
}

// TestSQLRuleOnARealModule: go list over a throwaway module whose
// package leaks SQL yields that violation, and only in non-test files.
func TestSQLRuleOnARealModule(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":                  "module example.com/leak\n\ngo 1.22\n",
		"store/store.go":          "package store\n\nimport _ \"database/sql\"\n",
		"leaky/leaky.go":          "package leaky\n\nimport _ \"database/sql\"\n",
		"clean/clean.go":          "package clean\n",
		"clean/clean_test.go":     "package clean\n\nimport _ \"database/sql\"\n",
		"clean/ext_clean_test.go": "package clean_test\n\nimport _ \"database/sql\"\n",
	}
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := sqlImportViolations(storeGoList(t, dir, "./..."), "example.com/leak/store")
	if want := []string{"example.com/leak/leaky imports database/sql"}; !slices.Equal(got, want) {
		t.Fatalf("violations = %q, want %q", got, want)
	}
}
