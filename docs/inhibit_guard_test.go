package docs

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/patrold/patrold/findings"
)

var inhibitTick = regexp.MustCompile("`([a-z_]+)`")

// inhibitDocProblems compares the inhibition table of FINDINGS.md with
// the rules, both ways: each row is one rule in order, its first cell the
// parent (and "at `severity`" its least severity), its second the
// children.
func inhibitDocProblems(doc string, rules []findings.InhibitRule) []string {
	rows, ok := patrolDocBlock(doc, "inhibit")
	if !ok {
		return []string{"FINDINGS.md: no <!-- guard:inhibit --> table"}
	}
	var problems []string
	if !strings.Contains(doc, "only findings with `source: "+string(findings.ParentSource)+"`\ncan be parents") {
		problems = append(problems, "FINDINGS.md does not say only `source: "+string(findings.ParentSource)+"` findings can be parents (findings.ParentSource)")
	}
	for _, k := range findings.KeptBy() {
		if !strings.Contains(doc, "`"+k+"` also holds") {
			problems = append(problems, "FINDINGS.md does not say what `"+k+"` also holds (findings.KeptBy)")
		}
	}
	if len(rows) != len(rules) {
		problems = append(problems, fmt.Sprintf("FINDINGS.md: %d inhibition rows, the code has %d rules", len(rows), len(rules)))
	}
	for i := range min(len(rows), len(rules)) {
		r, cells := rules[i], rows[i]
		parent := inhibitTick.FindAllStringSubmatch(cells[0], -1)
		var got findings.InhibitRule
		if len(parent) > 0 {
			got.Parent = parent[0][1]
		}
		for _, m := range parent[min(1, len(parent)):] {
			switch {
			case strings.Contains(cells[0], " at `"+m[1]+"`"):
				got.MinSeverity = findings.Severity(m[1])
			case strings.Contains(cells[0], " at most `"+m[1]+"`"):
				got.MaxSeverity = findings.Severity(m[1])
			case strings.Contains(cells[0], " on a `"+m[1]+"`"):
				got.ParentKind = m[1]
			}
		}
		if len(cells) > 1 {
			for _, m := range inhibitTick.FindAllStringSubmatch(cells[1], -1) {
				got.Children = append(got.Children, m[1])
			}
		}
		if got.Parent != r.Parent || got.MinSeverity != r.MinSeverity || got.MaxSeverity != r.MaxSeverity || got.ParentKind != r.ParentKind || !slices.Equal(got.Children, r.Children) {
			problems = append(problems, fmt.Sprintf("FINDINGS.md inhibition row %d: %+v, the code's rule %+v", i+1, got, r))
		}
	}
	return problems
}

// TestInhibitionDocMatchesCode: FINDINGS.md lists the inhibition rules
// of findings/inhibit.go, in order, parent, least severity and children.
func TestInhibitionDocMatchesCode(t *testing.T) {
	doc := readDoc(t, "FINDINGS.md")
	for _, p := range inhibitDocProblems(doc, findings.InhibitRules()) {
		t.Error(p)
	}
}

// TestInhibitionGuardFailsOnDrift: a child added in code, a severity
// dropped in the doc and a rule missing from the doc are each seen.
func TestInhibitionGuardFailsOnDrift(t *testing.T) {
	doc := readDoc(t, "FINDINGS.md")
	grown := findings.InhibitRules()
	grown[0].Children = append(grown[0].Children, "metrics_missing")
	if len(inhibitDocProblems(doc, grown)) == 0 {
		t.Error("a child added in code went unnoticed")
	}
	if len(inhibitDocProblems(strings.Replace(doc, "`high_disk` at `critical`", "`high_disk`", 1), findings.InhibitRules())) == 0 {
		t.Error("a least severity dropped from the doc went unnoticed")
	}
	if len(inhibitDocProblems(strings.Replace(doc, "| `network_unroutable` (", "| network (", 1), findings.InhibitRules())) == 0 {
		t.Error("a rule missing from the doc went unnoticed")
	}
	if len(inhibitDocProblems(strings.Replace(doc, " on a `storage`", "", 1), findings.InhibitRules())) == 0 {
		t.Error("a parent kind dropped from the doc went unnoticed")
	}
	if len(inhibitDocProblems(strings.Replace(doc, "| `high_disk` (the disk", "| `high_disk`, `backup_stale` (the disk", 1), findings.InhibitRules())) == 0 {
		t.Error("a child added in the doc went unnoticed")
	}
	if len(inhibitDocProblems(strings.Replace(doc, "source: deterministic`\ncan be parents", "any source`\ncan be parents", 1), findings.InhibitRules())) == 0 {
		t.Error("the parents' provenance dropped from the doc went unnoticed")
	}
	if len(inhibitDocProblems(strings.Replace(doc, "`node_offline` also holds", "a node also holds", 1), findings.InhibitRules())) == 0 {
		t.Error("the missing-metrics hold dropped from the doc went unnoticed")
	}
}
