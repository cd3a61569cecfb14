package archtest

// Who may link the heavy dependencies: the NATS server and the cgo SQLite
// driver. The graph is the module's non-test build, so tests may link
// anything; test-support packages sit below a tree that may.

import (
	"slices"
	"testing"
)

const (
	natsServer = "github.com/nats-io/nats-server"
	sqlite3    = "github.com/mattn/go-sqlite3"
)

// roots are the composition root and the command line above it.
var roots = []string{"daemon", "cmd/patrold"}

// natsServerLinkers may link nats-server: the roots and bus/embedded
// (with its test support, bus/embedded/natstest).
var natsServerLinkers = append([]string{"bus/embedded"}, roots...)

// sqliteLinkers may link the SQLite driver: the store (with storetest)
// and the roots.
var sqliteLinkers = append([]string{"store"}, roots...)

// onlyLink reports every module package outside allowed (relative paths,
// with the packages below them) that links a package of the tree target.
func onlyLink(target string, allowed []string) func(graph) []string {
	return func(g graph) []string {
		var out []string
		for _, p := range g.packages() {
			if under(p, allowed...) {
				continue
			}
			for _, d := range g.deps(p) {
				if inTree(d, target) || inTree(d, target+"/v2") {
					out = append(out, p+" links "+d)
				}
			}
		}
		slices.Sort(out)
		return out
	}
}

func TestOnlyTheRootAndEmbeddedLinkNATSServer(t *testing.T) {
	g := loadGraph(t)
	expectViolations(t, onlyLink(natsServer, natsServerLinkers), g)
	// The rule looks at a real link: the embedded server does link it.
	if !slices.ContainsFunc(g.deps(pkg("bus/embedded")), func(d string) bool { return inTree(d, natsServer+"/v2/server") }) {
		t.Fatal("bus/embedded does not link nats-server: the rule tests nothing")
	}
}

func TestNATSServerRuleFailsOnViolation(t *testing.T) {
	srv := natsServer + "/v2/server"
	g := synthetic("bus/embedded -> "+srv, "bus/embedded/natstest -> bus/embedded", "daemon -> bus/embedded",
		"cmd/patrold -> daemon", "bus -> github.com/nats-io/nats.go", "notify -> bus",
		// the violations: bus links the server again, config through it, api directly
		"bus -> bus/embedded", "config -> bus", "api -> "+srv)
	expectViolations(t, onlyLink(natsServer, natsServerLinkers), g,
		pkg("api")+" links "+srv, pkg("bus")+" links "+srv, pkg("config")+" links "+srv, pkg("notify")+" links "+srv)
}

func TestOnlyTheStoreAndTheRootLinkSQLite(t *testing.T) {
	g := loadGraph(t)
	expectViolations(t, onlyLink(sqlite3, sqliteLinkers), g)
	if !slices.Contains(g.deps(pkg("store")), sqlite3) {
		t.Fatal("store does not link " + sqlite3 + ": the rule tests nothing")
	}
}

func TestSQLiteRuleFailsOnViolation(t *testing.T) {
	g := synthetic("store -> "+sqlite3, "store/storetest -> store", "daemon -> store", "cmd/patrold -> daemon",
		"store/records -> std:time", "patrol -> store/records", "assistant -> store/records",
		// the violations: api pins the store, patrol/analyst links it through patrol
		"api -> store", "patrol -> store", "patrol/analyst -> patrol")
	expectViolations(t, onlyLink(sqlite3, sqliteLinkers), g,
		pkg("api")+" links "+sqlite3, pkg("patrol")+" links "+sqlite3, pkg("patrol/analyst")+" links "+sqlite3)
}
