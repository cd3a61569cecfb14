package docs

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/signals/coverage"
)

// coverageTable renders the union list as COVERAGE.md shows it: each
// check judged for a Proxmox source.
func coverageTable() string {
	var b strings.Builder
	b.WriteString("| check | key | with a Proxmox source | anchors' rules | patrold's rule |\n|---|---|---|---|---|\n")
	for _, r := range coverage.Judge([]string{"proxmox"}) {
		key, patrold := "none", "none"
		if r.Key != "" {
			key = "`" + r.Key + "`"
		}
		if r.Patrold != "" {
			patrold = r.Patrold
		}
		var rules []string
		for _, rule := range r.Rules {
			rules = append(rules, rule.Anchor+": "+rule.Rule)
		}
		if len(rules) == 0 {
			rules = []string{"none of the anchors"}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.Check, key, r.Verdict, strings.Join(rules, " · "), patrold)
	}
	return b.String()
}

// coverageDocProblems compares COVERAGE.md's table with the code whole,
// and checks that every catalogue key has a row in the list.
func coverageDocProblems(doc string) []string {
	var problems []string
	start, end := strings.Index(doc, "<!-- guard:coverage -->\n"), strings.Index(doc, "<!-- /guard:coverage -->")
	if start < 0 || end < start {
		return []string{"COVERAGE.md: no <!-- guard:coverage --> table"}
	}
	if got, want := doc[start+len("<!-- guard:coverage -->\n"):end], coverageTable(); got != want {
		problems = append(problems, "COVERAGE.md: the table differs from signals/coverage; it should read:\n"+want)
	}
	for _, typ := range signals.Types {
		if !slices.ContainsFunc(coverage.Checks(), func(c coverage.Check) bool { return c.Key == string(typ) }) {
			problems = append(problems, fmt.Sprintf("catalogue key %s has no row in signals/coverage/checks.go", typ))
		}
	}
	return problems
}

// TestCoverageDocMatchesCode: COVERAGE.md lists every check of the union
// list with its verdict for a Proxmox source, and every detector has a
// check.
func TestCoverageDocMatchesCode(t *testing.T) {
	for _, p := range coverageDocProblems(readDoc(t, "COVERAGE.md")) {
		t.Error(p)
	}
}

// TestCoverageGuardBites: a verdict changed and a row dropped are seen.
func TestCoverageGuardBites(t *testing.T) {
	doc := readDoc(t, "COVERAGE.md")
	for what, drift := range map[string][2]string{
		"a verdict raised": {"| inodes | none | not implemented |", "| inodes | none | covered |"},
		"a row dropped":    {"| network errors |", "| network-errors |"},
	} {
		if !strings.Contains(doc, drift[0]) {
			t.Fatalf("%s: the doc has no %q", what, drift[0])
		}
		if len(coverageDocProblems(strings.Replace(doc, drift[0], drift[1], 1))) == 0 {
			t.Errorf("%s went unnoticed", what)
		}
	}
}
