// Package archtest holds patrold's architecture tests: rules on the import
// graph of the module's non-test files, read once per test binary with
// `go list -deps -json ./...`. Each rule is a function from a graph to its
// violations, checked on the real graph and, to show it can fail, on a
// synthetic graph that breaks it.
//
// Helpers for every file of this package (store_test.go, contracts_test.go
// add their rules with them):
//
//	module                    the module path
//	pkg(rel) string           "config" -> "github.com/patrold/patrold/config" ("" is the module root)
//	project(path) bool        path is a package of this module
//	under(path, rels...) bool path is one of rels or below one of them
//	imports(t, rel) []string  direct imports of a module package (full paths, sorted)
//	deps(t, rel) []string     every package it links, transitively (sorted)
//	graph                     import path -> direct imports; g.deps(path) is the transitive closure
//	loadGraph(t) graph        the module's real graph (with std and external packages)
//	listGraph(dir, args...)   the graph `go list -json args...` gives in dir (a throwaway module)
//	g.below(root) []string    packages of g at or below the full path root
//	inTree(path, root) bool   path is root or below it (full paths)
//	standard(path) bool       a standard-library path
//	synthetic(edges...) graph a graph from "a -> b" edges of relative paths, for violation tests
//	expectViolations(t, rule, g, want...) fails unless rule(g) reports exactly want
package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/patrold/patrold"

func pkg(rel string) string {
	if rel == "" {
		return module
	}
	return module + "/" + rel
}

func project(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

func under(path string, rels ...string) bool {
	for _, r := range rels {
		if inTree(path, pkg(r)) {
			return true
		}
	}
	return false
}

// graph maps an import path to its direct imports.
type graph map[string][]string

// deps is every package path links, transitively, sorted.
func (g graph) deps(path string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		for _, i := range g[p] {
			if !seen[i] {
				seen[i] = true
				walk(i)
			}
		}
	}
	walk(path)
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// packages are the module's own packages in g, sorted.
func (g graph) packages() []string {
	var out []string
	for p := range g {
		if project(p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

var (
	graphOnce sync.Once
	realGraph graph
	graphErr  error
)

// loadGraph lists the module's non-test build graph once per test binary.
func loadGraph(t *testing.T) graph {
	t.Helper()
	graphOnce.Do(func() {
		if graphErr = touchSources("../.."); graphErr != nil {
			return
		}
		realGraph, graphErr = listGraph("../..", "-deps", "./...")
		if graphErr == nil {
			if _, ok := realGraph[pkg("bus")]; !ok {
				graphErr = errors.New("go list output has no " + pkg("bus") + ": not run from the module")
			}
		}
	})
	if graphErr != nil {
		t.Fatal(graphErr)
	}
	return realGraph
}

// listGraph runs `go list -json` with args in dir and returns the graph of
// the packages it lists (their non-test imports).
func listGraph(dir string, args ...string) (graph, error) {
	cmd := exec.Command("go", append([]string{"list", "-json=ImportPath,Imports"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.New("go list: " + err.Error() + ": " + stderr.String())
	}
	return decodeGraph(out)
}

// decodeGraph reads the stream of JSON objects `go list -json` prints.
func decodeGraph(raw []byte) (graph, error) {
	g := graph{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, errors.New("decode go list output: " + err.Error())
		}
		g[p.ImportPath] = p.Imports
	}
	if len(g) == 0 {
		return nil, errors.New("go list listed no package")
	}
	return g, nil
}

// touchSources stats every Go file and go.mod of the module. go test
// caches a result keyed on the files the test itself opened or stat'ed,
// and the graph comes from a child process. Without this, an edit that
// breaks a rule could be answered from the cache.
func touchSources(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "var" || name == "bin" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") || d.Name() == "go.mod" {
			_, err = os.Stat(path)
		}
		return err
	})
}

// standard reports a standard-library path: no dot in its first element.
func standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// inTree reports whether path is root or a package below it.
func inTree(path, root string) bool { return path == root || strings.HasPrefix(path, root+"/") }

// below are the packages of g at root or below it, sorted.
func (g graph) below(root string) []string {
	var out []string
	for p := range g {
		if inTree(p, root) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func imports(t *testing.T, rel string) []string {
	t.Helper()
	g := loadGraph(t)
	p := pkg(rel)
	list, ok := g[p]
	if !ok {
		t.Fatalf("package %s is not in the module", p)
	}
	return slices.Sorted(slices.Values(list))
}

func deps(t *testing.T, rel string) []string {
	t.Helper()
	g := loadGraph(t)
	if _, ok := g[pkg(rel)]; !ok {
		t.Fatalf("package %s is not in the module", pkg(rel))
	}
	return g.deps(pkg(rel))
}

// synthetic builds a graph from "a -> b" edges; paths are relative to the
// module unless they contain a dot in their first element (external) or
// are standard-looking (no slash-free module prefix needed: "database/sql"
// is written as "std:database/sql").
func synthetic(edges ...string) graph {
	abs := func(s string) string {
		if rest, ok := strings.CutPrefix(s, "std:"); ok {
			return rest
		}
		if !standard(s) {
			return s
		}
		return pkg(s)
	}
	g := graph{}
	for _, e := range edges {
		from, to, ok := strings.Cut(e, " -> ")
		if !ok {
			panic("synthetic edge without ' -> ': " + e)
		}
		f, t := abs(strings.TrimSpace(from)), abs(strings.TrimSpace(to))
		g[f] = append(g[f], t)
		if _, ok := g[t]; !ok {
			g[t] = nil
		}
	}
	return g
}

// expectViolations fails unless rule reports exactly want on g (sorted).
func expectViolations(t *testing.T, rule func(graph) []string, g graph, want ...string) {
	t.Helper()
	got := rule(g)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("violations\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// domain are the packages holding patrold's rules: they are configured
// through their own Options, never by reading the configuration.
var domain = []string{"alerts", "signals", "findings", "patrol", "agent", "assistant", "model", "snapshot"}

// domainImportsNoConfig: no domain package links config, directly or not.
func domainImportsNoConfig(g graph) []string {
	var v []string
	for _, p := range g.packages() {
		if under(p, domain...) && slices.Contains(g.deps(p), pkg("config")) {
			v = append(v, p+" -> "+pkg("config"))
		}
	}
	return v
}

// configAllowed are the project packages config may import: the
// packages whose sections it composes (each owns its section type, its
// defaults and its Validate; see config_test.go in this package) and the
// leaf that collects a section's problems.
var configAllowed = []string{
	"alerts", "api", "assistant", "bus", "cluster", "findings", "internal/confcheck", "internal/logging",
	"model", "notify", "patrol", "snapshot/sources",
}

// configImportsOnlyAllowed: config imports no project package outside
// configAllowed.
func configImportsOnlyAllowed(g graph) []string {
	var v []string
	for _, i := range g[pkg("config")] {
		if project(i) && !slices.Contains(configAllowed, strings.TrimPrefix(i, module+"/")) {
			v = append(v, pkg("config")+" -> "+i)
		}
	}
	return v
}

func TestDomainImportsNoConfig(t *testing.T) {
	expectViolations(t, domainImportsNoConfig, loadGraph(t))
}

func TestDomainImportsNoConfigFailsOnViolation(t *testing.T) {
	// A direct import, an indirect one (through api), and packages that may.
	g := synthetic("assistant -> config", "snapshot/proxmox -> api", "api -> config", "daemon -> config", "patrol -> signals")
	expectViolations(t, domainImportsNoConfig, g,
		pkg("assistant")+" -> "+pkg("config"), pkg("snapshot/proxmox")+" -> "+pkg("config"))
}

func TestConfigImportsOnlyAllowed(t *testing.T) {
	expectViolations(t, configImportsOnlyAllowed, loadGraph(t))
}

func TestConfigImportsOnlyAllowedFailsOnViolation(t *testing.T) {
	g := synthetic("config -> daemon", "config -> alerts", "config -> github.com/knadh/koanf/v2", "config -> std:time", "daemon -> config")
	expectViolations(t, configImportsOnlyAllowed, g, pkg("config")+" -> "+pkg("daemon"))
}

// TestHelpers pins the helpers the other rule files use.
func TestHelpers(t *testing.T) {
	g := synthetic("a -> b", "b -> c", "b -> std:fmt", "c -> golang.org/x/x")
	if got, want := g.deps(pkg("a")), []string{"fmt", pkg("b"), pkg("c"), "golang.org/x/x"}; !slices.Equal(got, want) {
		t.Fatalf("deps %v, want %v", got, want)
	}
	if got := imports(t, "config"); !slices.Contains(got, "github.com/knadh/koanf/v2") || slices.Contains(got, pkg("daemon")) {
		t.Fatalf("imports(config) %v", got)
	}
	if got := deps(t, "signals"); slices.Contains(got, pkg("config")) || !slices.Contains(got, pkg("snapshot")) {
		t.Fatalf("deps(signals) %v", got)
	}
	if !under(pkg("snapshot/proxmox"), "snapshot") || under(pkg("snapshots"), "snapshot") || project("github.com/patrold/patroldx") {
		t.Fatal("under/project match by path element")
	}
}

// writeTree writes files (path relative to the tree: body) into a new
// temporary directory and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
