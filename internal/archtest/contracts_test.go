package archtest

// Rules of slice B (issue 12): where the message contracts live and who may
// link the transport. The graph is the non-test build of every package of
// the module, from `go list -deps -json ./...`; each rule also runs over a
// small synthetic graph that breaks it, so a rule that could never fail
// fails its own test.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

const cxModule = "github.com/patrold/patrold"

// cxPkg is one package of the graph.
type cxPkg struct {
	Standard bool     // part of the standard library
	Imports  []string // direct, non-test imports
}

// cxGraph maps an import path to its package.
type cxGraph map[string]cxPkg

// deps returns every package path reachable from pkg, pkg excluded, sorted.
func (g cxGraph) deps(pkg string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		for _, imp := range g[p].Imports {
			if !seen[imp] {
				seen[imp] = true
				walk(imp)
			}
		}
	}
	walk(pkg)
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// under returns the module packages at root or below it, sorted.
func (g cxGraph) under(root string) []string {
	var out []string
	for p := range g {
		if p == root || strings.HasPrefix(p, root+"/") {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func cxInTree(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

// cxRule is one architecture rule: it returns one line per violation.
type cxRule struct {
	name  string
	check func(g cxGraph) []string
}

// cxNoDepOn forbids every package under each of roots from depending
// (transitively) on any package under one of the forbidden trees.
func cxNoDepOn(roots []string, forbidden ...string) func(cxGraph) []string {
	return func(g cxGraph) []string {
		var out []string
		for _, root := range roots {
			for _, p := range g.under(root) {
				for _, d := range g.deps(p) {
					for _, f := range forbidden {
						if cxInTree(d, f) {
							out = append(out, p+" depends on "+d)
						}
					}
				}
			}
		}
		return out
	}
}

// cxOnlyProjectDeps allows the package under root to depend on no module
// package but the allowed ones (and the standard library and third-party
// packages).
func cxOnlyProjectDeps(root string, allowed ...string) func(cxGraph) []string {
	return func(g cxGraph) []string {
		var out []string
		for _, p := range g.under(root) {
			for _, d := range g.deps(p) {
				if cxInTree(d, cxModule) && !cxInTree(d, root) && !slices.Contains(allowed, d) {
					out = append(out, p+" depends on "+d)
				}
			}
		}
		return out
	}
}

// cxStdlibOnly allows the packages under root to import the standard
// library only.
func cxStdlibOnly(root string) func(cxGraph) []string {
	return func(g cxGraph) []string {
		var out []string
		for _, p := range g.under(root) {
			for _, d := range g.deps(p) {
				if pkg, ok := g[d]; !ok || !pkg.Standard {
					out = append(out, p+" depends on "+d)
				}
			}
		}
		return out
	}
}

const (
	cxNatsServer = "github.com/nats-io/nats-server"
	cxNats       = "github.com/nats-io"
)

func cxM(rel string) string { return cxModule + "/" + rel }

// cxRules are the rules the module must keep.
var cxRules = []cxRule{
	{"patrol and signals link no nats-server", cxNoDepOn([]string{cxM("patrol"), cxM("signals")}, cxNatsServer)},
	{"assistant depends on neither patrol nor api", cxNoDepOn([]string{cxM("assistant")}, cxM("patrol"), cxM("api"))},
	{"patrol does not depend on assistant", cxNoDepOn([]string{cxM("patrol")}, cxM("assistant"))},
	{"bus imports no domain package", cxOnlyProjectDeps(cxM("bus"), cxM("contracts"))},
	{"contracts is a leaf of the standard library", cxStdlibOnly(cxM("contracts"))},
}

var (
	cxOnce  sync.Once
	cxGot   cxGraph
	cxError error
)

// cxLoad lists the module's non-test build graph once per test binary.
func cxLoad(t *testing.T) cxGraph {
	t.Helper()
	cxOnce.Do(func() {
		if cxError = cxTouchSources("../.."); cxError != nil {
			return
		}
		cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Standard,Imports", "./...")
		cmd.Dir = "../.."
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			cxError = errors.New("go list: " + err.Error() + ": " + stderr.String())
			return
		}
		cxGot, cxError = cxDecode(out)
	})
	if cxError != nil {
		t.Fatal(cxError)
	}
	return cxGot
}

// cxTouchSources stats every Go file and go.mod of the module. go test
// caches a result keyed on the files the test itself opened or stat'ed, and
// the graph comes from a child process: without this, an edit that breaks a
// rule could be answered from the cache.
func cxTouchSources(root string) error {
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

// cxDecode reads the stream of JSON objects `go list -json` prints.
func cxDecode(raw []byte) (cxGraph, error) {
	g := cxGraph{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		var p struct {
			ImportPath string
			Standard   bool
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, errors.New("decode go list output: " + err.Error())
		}
		g[p.ImportPath] = cxPkg{Standard: p.Standard, Imports: p.Imports}
	}
	if _, ok := g[cxM("bus")]; !ok {
		return nil, errors.New("go list output has no " + cxM("bus") + ": not run from the module")
	}
	return g, nil
}

func TestContractsRulesHoldForTheModule(t *testing.T) {
	g := cxLoad(t)
	for _, r := range cxRules {
		if got := r.check(g); len(got) != 0 {
			t.Errorf("%s:\n  %s", r.name, strings.Join(got, "\n  "))
		}
	}
	// The rules look at real packages: an empty graph would pass them all.
	for _, p := range []string{"patrol", "signals", "assistant", "bus", "contracts"} {
		if len(g.under(cxM(p))) == 0 {
			t.Errorf("package %s is not in the graph", cxM(p))
		}
	}
}

// cxClean is a small graph every rule accepts, shaped like the module.
func cxClean() cxGraph {
	return cxGraph{
		"fmt":                                   {Standard: true},
		"encoding/json":                         {Standard: true, Imports: []string{"fmt"}},
		cxNats + "/nats.go":                     {},
		cxNatsServer + "/v2/server":             {Imports: []string{cxNats + "/nats.go"}},
		cxM("contracts"):                        {Imports: []string{"encoding/json"}},
		cxM("bus"):                              {Imports: []string{cxM("contracts"), cxNatsServer + "/v2/server"}},
		cxM("signals"):                          {Imports: []string{"fmt"}},
		cxM("findings"):                         {Imports: []string{cxM("contracts"), cxM("signals")}},
		cxM("patrol"):                           {Imports: []string{cxM("findings"), cxM("contracts")}},
		cxM("patrol/analyst"):                   {Imports: []string{cxM("patrol")}},
		cxM("assistant"):                        {Imports: []string{cxM("findings"), cxM("bus")}},
		cxM("api"):                              {Imports: []string{cxM("assistant"), cxM("patrol")}},
		cxM("daemon"):                           {Imports: []string{cxM("api"), cxM("bus"), cxM("patrol")}},
		"github.com/prometheus/client_golang/x": {},
	}
}

// with returns a copy of g where pkg also imports imps.
func (g cxGraph) with(pkg string, imps ...string) cxGraph {
	out := cxGraph{}
	for k, v := range g {
		out[k] = cxPkg{Standard: v.Standard, Imports: slices.Clone(v.Imports)}
	}
	p := out[pkg]
	p.Imports = append(p.Imports, imps...)
	out[pkg] = p
	for _, imp := range imps {
		if _, ok := out[imp]; !ok {
			out[imp] = cxPkg{}
		}
	}
	return out
}

func TestContractsRulesFailOnViolations(t *testing.T) {
	clean := cxClean()
	for _, r := range cxRules {
		if got := r.check(clean); len(got) != 0 {
			t.Fatalf("%s: the clean graph violates it: %v", r.name, got)
		}
	}
	rule := map[string]cxRule{}
	for _, r := range cxRules {
		rule[r.name] = r
	}
	for _, tc := range []struct {
		rule  string
		graph cxGraph
		want  []string
	}{
		{"patrol and signals link no nats-server", clean.with(cxM("patrol"), cxM("bus")), []string{
			cxM("patrol") + " depends on " + cxNatsServer + "/v2/server",
			cxM("patrol/analyst") + " depends on " + cxNatsServer + "/v2/server",
		}},
		// signals importing the server breaks signals and, through
		// findings, everything under patrol.
		{"patrol and signals link no nats-server", clean.with(cxM("signals"), cxNatsServer+"/v2/server"), []string{
			cxM("patrol") + " depends on " + cxNatsServer + "/v2/server",
			cxM("patrol/analyst") + " depends on " + cxNatsServer + "/v2/server",
			cxM("signals") + " depends on " + cxNatsServer + "/v2/server",
		}},
		{"assistant depends on neither patrol nor api", clean.with(cxM("assistant"), cxM("api")), []string{
			cxM("assistant") + " depends on " + cxM("api"),
			cxM("assistant") + " depends on " + cxM("patrol"),
		}},
		{"assistant depends on neither patrol nor api", clean.with(cxM("assistant"), cxM("patrol/analyst")), []string{
			cxM("assistant") + " depends on " + cxM("patrol"),
			cxM("assistant") + " depends on " + cxM("patrol/analyst"),
		}},
		{"patrol does not depend on assistant", clean.with(cxM("patrol/analyst"), cxM("assistant")), []string{
			cxM("patrol/analyst") + " depends on " + cxM("assistant"),
		}},
		{"bus imports no domain package", clean.with(cxM("bus"), cxM("findings")), []string{
			cxM("bus") + " depends on " + cxM("findings"),
			cxM("bus") + " depends on " + cxM("signals"),
		}},
		{"contracts is a leaf of the standard library", clean.with(cxM("contracts"), cxNats+"/nats.go"), []string{
			cxM("contracts") + " depends on " + cxNats + "/nats.go",
		}},
		{"contracts is a leaf of the standard library", clean.with(cxM("contracts"), cxM("signals")), []string{
			cxM("contracts") + " depends on " + cxM("signals"),
		}},
	} {
		r, ok := rule[tc.rule]
		if !ok {
			t.Fatalf("no rule %q", tc.rule)
		}
		if got := r.check(tc.graph); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.rule, got, tc.want)
		}
	}
}

func TestContractsDecodeRefusesBadListings(t *testing.T) {
	if _, err := cxDecode([]byte(`{"ImportPath":"x"} {`)); err == nil || !strings.HasPrefix(err.Error(), "decode go list output: ") {
		t.Errorf("truncated output: %v", err)
	}
	if _, err := cxDecode([]byte(`{"ImportPath":"fmt","Standard":true}`)); err == nil || err.Error() != "go list output has no "+cxM("bus")+": not run from the module" {
		t.Errorf("foreign output: %v", err)
	}
	g, err := cxDecode([]byte(`{"ImportPath":"fmt","Standard":true}{"ImportPath":"` + cxM("bus") + `","Imports":["fmt"]}`))
	if want := (cxGraph{"fmt": {Standard: true}, cxM("bus"): {Imports: []string{"fmt"}}}); err != nil || !reflect.DeepEqual(g, want) {
		t.Errorf("decode: %v %v", g, err)
	}
}
