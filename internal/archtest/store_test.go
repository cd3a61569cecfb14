package archtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// storePackage is the one package (with those below it, storetest)
// allowed to reach SQL.
var storePackage = pkg("store")

// sqlImportViolations names every package of the module mod but allowed
// (and the packages under it) whose non-test files import database/sql
// (or its driver interface), sorted.
func sqlImportViolations(g graph, mod, allowed string) []string {
	var out []string
	for _, p := range g.below(mod) {
		if inTree(p, allowed) {
			continue // the store and its own subpackages (storetest)
		}
		for _, imp := range g[p] {
			if inTree(imp, "database/sql") {
				out = append(out, fmt.Sprintf("%s imports %s", p, imp))
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestOnlyStoreImportsSQL: the store owns the database; every other
// package reaches it through the store's typed methods.
func TestOnlyStoreImportsSQL(t *testing.T) {
	g := loadGraph(t)
	if _, ok := g[storePackage]; !ok {
		t.Fatalf("%s is not among the listed packages", storePackage)
	}
	if got := sqlImportViolations(g, module, storePackage); len(got) != 0 {
		t.Fatalf("only %s may import database/sql outside tests:\n%s", storePackage, strings.Join(got, "\n"))
	}
}

// TestSQLRuleCatchesAViolation: the checker reports a package importing
// database/sql, and not the store, its tests or packages without SQL.
func TestSQLRuleCatchesAViolation(t *testing.T) {
	g := synthetic("store -> std:context", "store -> std:database/sql", "store/storetest -> std:database/sql",
		"api -> std:context", "api -> std:database/sql", "api -> std:net/http",
		"assistant -> std:database/sql/driver", "findings -> std:time",
		"github.com/mattn/go-sqlite3 -> std:database/sql")
	want := []string{pkg("api") + " imports database/sql", pkg("assistant") + " imports database/sql/driver"}
	if got := sqlImportViolations(g, module, storePackage); !slices.Equal(got, want) {
		t.Fatalf("violations = %q, want %q", got, want)
	}
}

// TestSQLRuleOnARealModule: go list over a throwaway module whose
// package leaks SQL yields that violation, and only in non-test files.
func TestSQLRuleOnARealModule(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"go.mod":                  "module example.com/leak\n\ngo 1.22\n",
		"store/store.go":          "package store\n\nimport _ \"database/sql\"\n",
		"leaky/leaky.go":          "package leaky\n\nimport _ \"database/sql\"\n",
		"clean/clean.go":          "package clean\n",
		"clean/clean_test.go":     "package clean\n\nimport _ \"database/sql\"\n",
		"clean/ext_clean_test.go": "package clean_test\n\nimport _ \"database/sql\"\n",
	})
	g, err := listGraph(dir, "./...")
	if err != nil {
		t.Fatal(err)
	}
	got := sqlImportViolations(g, "example.com/leak", "example.com/leak/store")
	if want := []string{"example.com/leak/leaky imports database/sql"}; !slices.Equal(got, want) {
		t.Fatalf("violations = %q, want %q", got, want)
	}
}
