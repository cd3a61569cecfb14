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
//	synthetic(edges...) graph a graph from "a -> b" edges of relative paths, for violation tests
//	expectViolations(t, rule, g, want...) fails unless rule(g) reports exactly want
package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
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
		p := pkg(r)
		if path == p || strings.HasPrefix(path, p+"/") {
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

func loadGraph(t *testing.T) graph {
	t.Helper()
	graphOnce.Do(func() {
		cmd := exec.Command("go", "list", "-deps", "-json", "./...")
		cmd.Dir = "../.."
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			graphErr = errors.New("go list: " + err.Error() + ": " + stderr.String())
			return
		}
		realGraph = graph{}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p struct {
				ImportPath string
				Imports    []string
			}
			if err := dec.Decode(&p); err == io.EOF {
				break
			} else if err != nil {
				graphErr = err
				return
			}
			realGraph[p.ImportPath] = p.Imports
		}
	})
	if graphErr != nil {
		t.Fatal(graphErr)
	}
	return realGraph
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
		if first, _, _ := strings.Cut(s, "/"); strings.Contains(first, ".") {
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

// configAllowed are the project packages config may import.
//
// Still listed because config's sections embed their Options types (the
// keys map one to one onto those structs, with their defaults and
// Validate): alerts, bus, model, notify and the snapshot
// sources. Issue 12 moves these to config-owned section types mapped by
// the composition root (findings left with the retention section, snapshot/file and
// snapshot/probe with source.file and source.probe); each
// one that moves leaves this list, and nothing may join it but leaf types.
var configAllowed = []string{
	"alerts", "bus", "model", "notify",
	"snapshot/demo", "snapshot/exec", "snapshot/prometheus", "snapshot/proxmox",
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
