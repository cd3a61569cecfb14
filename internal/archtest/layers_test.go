package archtest

// Layers: internal/ holds leaves, and the composition root holds no
// cluster behaviour.

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/patrold/patrold/cluster"
)

// internalOnlyLeaves: a package under internal/ imports no module package
// but contracts and internal/ ones.
func internalOnlyLeaves(g graph) []string {
	var out []string
	for _, p := range g.below(pkg("internal")) {
		for _, i := range g[p] {
			if project(i) && !under(i, "internal", "contracts") {
				out = append(out, p+" -> "+i)
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestInternalHoldsLeaves(t *testing.T) {
	g := loadGraph(t)
	expectViolations(t, internalOnlyLeaves, g)
	if len(g.below(pkg("internal"))) < 3 {
		t.Fatalf("internal/ has %d packages in the graph", len(g.below(pkg("internal"))))
	}
}

func TestInternalRuleFailsOnViolation(t *testing.T) {
	g := synthetic("internal/testkit -> std:testing", "internal/shares -> contracts", "internal/instance -> internal/dirlock",
		// the violations: a service in internal/, a helper that reaches the transport
		"internal/sessionrpc -> assistant", "internal/sessionrpc -> store", "internal/natstest -> bus")
	expectViolations(t, internalOnlyLeaves, g,
		pkg("internal/natstest")+" -> "+pkg("bus"),
		pkg("internal/sessionrpc")+" -> "+pkg("assistant"), pkg("internal/sessionrpc")+" -> "+pkg("store"))
}

// daemonSpeaksNoNATS: the composition root imports no NATS client
// package; what speaks NATS for the cluster (the follower, seeding,
// forwarding, the session service) is package cluster's.
func daemonSpeaksNoNATS(g graph) []string {
	var out []string
	for _, p := range g.below(pkg("daemon")) {
		for _, i := range g[p] {
			if inTree(i, "github.com/nats-io/nats.go") {
				out = append(out, p+" -> "+i)
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestDaemonSpeaksNoNATS(t *testing.T) {
	expectViolations(t, daemonSpeaksNoNATS, loadGraph(t))
}

func TestDaemonNATSRuleFailsOnViolation(t *testing.T) {
	g := synthetic("daemon -> bus", "daemon -> cluster", "cluster -> github.com/nats-io/nats.go",
		"daemon -> github.com/nats-io/nats.go/jetstream", "daemon/x -> github.com/nats-io/nats.go")
	expectViolations(t, daemonSpeaksNoNATS, g,
		pkg("daemon")+" -> github.com/nats-io/nats.go/jetstream", pkg("daemon/x")+" -> github.com/nats-io/nats.go")
}

// replicationMethods are the store methods of replication: those of
// cluster.Store.
func replicationMethods() []string {
	st := reflect.TypeFor[cluster.Store]()
	out := make([]string, 0, st.NumMethod())
	for i := range st.NumMethod() {
		out = append(out, st.Method(i).Name)
	}
	return out
}

// clusterBehaviour are the calls that are cluster behaviour, not its
// wiring: the replication methods of the store, and fetching a seed copy
// (installing one is cluster.InstallSeed's).
func clusterBehaviour() []string { return append(replicationMethods(), "FetchSeed") }

// replicationCalls lists "file:line: name" for every call, in the
// non-test Go files of dir, of a method named in methods: capture, apply,
// fencing and seeding belong to package cluster.
func replicationCalls(dir string, methods []string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var out []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && slices.Contains(methods, sel.Sel.Name) {
				out = append(out, fmt.Sprintf("%s:%d: %s", name, fset.Position(sel.Pos()).Line, sel.Sel.Name))
			}
			return true
		})
	}
	slices.Sort(out)
	return out, nil
}

func TestDaemonHoldsNoReplication(t *testing.T) {
	methods := replicationMethods()
	if len(methods) < 6 || !slices.Contains(methods, "EnableCapture") {
		t.Fatalf("cluster.Store has methods %v", methods)
	}
	got, err := replicationCalls("../../daemon", clusterBehaviour())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("the daemon wires the cluster; its behaviour is package cluster's:\n%s", strings.Join(got, "\n"))
	}
	// The check reads real calls: the cluster package makes them.
	if got, err := replicationCalls("../../cluster", methods); err != nil || len(got) < 6 {
		t.Fatalf("calls in cluster: %v %v", got, err)
	}
}

func TestDaemonReplicationRuleFailsOnViolation(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"replication.go":  "package daemon\n\nfunc (r *x) promote() {\n\tr.store.EnableCapture(ctx, s, o, 1)\n\t_ = r.store.ReplicaStatus\n}\n",
		"fence.go":        "package daemon\n\nfunc f() { n, _ := st.DropDiverged(ctx, t); st.Check(ctx) }\n",
		"fence_test.go":   "package daemon\n\nfunc g() { st.DisableCapture(ctx) }\n",
		"notes.txt":       "st.ApplyState(ctx)\n",
		"clean.go":        "package daemon\n\nfunc h() { st.Open(ctx) }\n",
		"sub/capture.go":  "package sub\n\nfunc i() { st.EnableCapture(ctx) }\n",
		"wiring_other.go": "package daemon\n\nfunc j() { m.Start(ctx); m.WhileWriter(fn) }\n",
		"seed.go":         "package daemon\n\nfunc s() { cluster.InstallSeed(ctx, nc, js, p, o); cluster.FetchSeed(ctx, nc, js, g, p, tmp) }\n",
	})
	got, err := replicationCalls(dir, clusterBehaviour())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"fence.go:3: DropDiverged", "replication.go:4: EnableCapture", "seed.go:3: FetchSeed"}; !slices.Equal(got, want) {
		t.Fatalf("violations %q, want %q", got, want)
	}
}
