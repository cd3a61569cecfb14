package archtest

// Rules of slice B: where the message contracts live and who may link the
// transport. The graph is the non-test build of every package of the
// module, from `go list -deps -json ./...`. Each rule also runs over a
// small synthetic graph that breaks it, so a rule that could never fail
// fails its own test.

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// cxRule is one architecture rule: it returns one line per violation.
type cxRule struct {
	name  string
	check func(g graph) []string
}

// cxNoDepOn forbids every package under each of roots from depending
// (transitively) on any package under one of the forbidden trees.
func cxNoDepOn(roots []string, forbidden ...string) func(graph) []string {
	return func(g graph) []string {
		var out []string
		for _, root := range roots {
			for _, p := range g.below(root) {
				for _, d := range g.deps(p) {
					for _, f := range forbidden {
						if inTree(d, f) {
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
func cxOnlyProjectDeps(root string, allowed ...string) func(graph) []string {
	return func(g graph) []string {
		var out []string
		for _, p := range g.below(root) {
			for _, d := range g.deps(p) {
				if project(d) && !inTree(d, root) && !slices.Contains(allowed, d) {
					out = append(out, p+" depends on "+d)
				}
			}
		}
		return out
	}
}

// cxStdlibOnly allows the packages under root to import the standard
// library only.
func cxStdlibOnly(root string) func(graph) []string {
	return func(g graph) []string {
		var out []string
		for _, p := range g.below(root) {
			for _, d := range g.deps(p) {
				if !standard(d) {
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

func cxM(rel string) string { return pkg(rel) }

// cxRules are the rules the module must keep.
var cxRules = []cxRule{
	{"patrol and signals link no nats-server", cxNoDepOn([]string{cxM("patrol"), cxM("signals")}, cxNatsServer)},
	{"assistant depends on neither patrol nor api", cxNoDepOn([]string{cxM("assistant")}, cxM("patrol"), cxM("api"))},
	{"patrol does not depend on assistant", cxNoDepOn([]string{cxM("patrol")}, cxM("assistant"))},
	{"bus imports no domain package", cxOnlyProjectDeps(cxM("bus"), cxM("contracts"))},
	{"contracts is a leaf of the standard library", cxStdlibOnly(cxM("contracts"))},
}

func TestContractsRulesHoldForTheModule(t *testing.T) {
	g := loadGraph(t)
	for _, r := range cxRules {
		if got := r.check(g); len(got) != 0 {
			t.Errorf("%s:\n  %s", r.name, strings.Join(got, "\n  "))
		}
	}
	// The rules look at real packages: an empty graph would pass them all.
	for _, p := range []string{"patrol", "signals", "assistant", "bus", "contracts"} {
		if len(g.below(cxM(p))) == 0 {
			t.Errorf("package %s is not in the graph", cxM(p))
		}
	}
}

// cxClean is a small graph every rule accepts, shaped like the module.
func cxClean() graph {
	return graph{
		"fmt":                                   nil,
		"encoding/json":                         {"fmt"},
		cxNats + "/nats.go":                     nil,
		cxNatsServer + "/v2/server":             {cxNats + "/nats.go"},
		cxM("contracts"):                        {"encoding/json"},
		cxM("bus"):                              {cxM("contracts"), cxNatsServer + "/v2/server"},
		cxM("signals"):                          {"fmt"},
		cxM("findings"):                         {cxM("contracts"), cxM("signals")},
		cxM("patrol"):                           {cxM("findings"), cxM("contracts")},
		cxM("patrol/analyst"):                   {cxM("patrol")},
		cxM("assistant"):                        {cxM("findings"), cxM("bus")},
		cxM("api"):                              {cxM("assistant"), cxM("patrol")},
		cxM("daemon"):                           {cxM("api"), cxM("bus"), cxM("patrol")},
		"github.com/prometheus/client_golang/x": nil,
	}
}

// with returns a copy of g where p also imports imps.
func (g graph) with(p string, imps ...string) graph {
	out := graph{}
	for k, v := range g {
		out[k] = slices.Clone(v)
	}
	out[p] = append(out[p], imps...)
	for _, imp := range imps {
		if _, ok := out[imp]; !ok {
			out[imp] = nil
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
		graph graph
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

func TestDecodeGraphRefusesBadListings(t *testing.T) {
	if _, err := decodeGraph([]byte(`{"ImportPath":"x"} {`)); err == nil || !strings.HasPrefix(err.Error(), "decode go list output: ") {
		t.Errorf("truncated output: %v", err)
	}
	if _, err := decodeGraph(nil); err == nil || err.Error() != "go list listed no package" {
		t.Errorf("empty output: %v", err)
	}
	g, err := decodeGraph([]byte(`{"ImportPath":"fmt"}{"ImportPath":"` + cxM("bus") + `","Imports":["fmt"]}`))
	if want := (graph{"fmt": nil, cxM("bus"): {"fmt"}}); err != nil || !reflect.DeepEqual(g, want) {
		t.Errorf("decode: %v %v", g, err)
	}
}
