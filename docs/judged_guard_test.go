package docs

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/patrold/patrold/signals"
)

// judgedDocProblems compares the judged-kinds table of MODEL_STAGES.md
// with signals.JudgedKinds and signals.Ceiling, both ways: one row per
// catalogue type, in catalogue order.
func judgedDocProblems(doc string) []string {
	rows, ok := patrolDocBlock(doc, "judged")
	if !ok {
		return []string{"MODEL_STAGES.md: no <!-- guard:judged --> table"}
	}
	var problems []string
	if len(rows) != len(signals.Types) {
		problems = append(problems, fmt.Sprintf("MODEL_STAGES.md: %d judged rows, the catalogue has %d types", len(rows), len(signals.Types)))
	}
	for i := range min(len(rows), len(signals.Types)) {
		typ, cells := signals.Types[i], rows[i]
		var kinds []string
		for _, k := range signals.JudgedKinds(typ) {
			kinds = append(kinds, string(k))
		}
		var got []string
		if len(cells) > 1 {
			for _, m := range inhibitTick.FindAllStringSubmatch(cells[1], -1) {
				got = append(got, m[1])
			}
		}
		ceiling := ""
		if len(cells) > 2 {
			ceiling = strings.Trim(cells[2], "`")
		}
		if cells[0] != "`"+string(typ)+"`" || !slices.Equal(got, kinds) || ceiling != signals.Ceiling(typ) {
			problems = append(problems, fmt.Sprintf("MODEL_STAGES.md judged row %d: %q, the code's %s on %v, ceiling %q", i+1, cells, typ, kinds, signals.Ceiling(typ)))
		}
	}
	return problems
}

// TestJudgedKindsDocMatchesCode: MODEL_STAGES.md lists, for every
// catalogue key, the kinds detection judges it on and its ceiling.
func TestJudgedKindsDocMatchesCode(t *testing.T) {
	for _, p := range judgedDocProblems(readDoc(t, "MODEL_STAGES.md")) {
		t.Error(p)
	}
}

// TestJudgedKindsGuardBites: a kind added or dropped, a ceiling dropped
// and a row missing are each seen.
func TestJudgedKindsGuardBites(t *testing.T) {
	doc := readDoc(t, "MODEL_STAGES.md")
	for what, drift := range map[string][2]string{
		"a kind added":     {"| `node_offline` | `node` |", "| `node_offline` | `node`, `vm` |"},
		"a kind dropped":   {"| `high_disk` | `storage`, `vm`, `container` |", "| `high_disk` | `vm`, `container` |"},
		"a ceiling lost":   {"| `capacity_forecast` | `storage`, `vm`, `container` | `warning` |", "| `capacity_forecast` | `storage`, `vm`, `container` | |"},
		"a row missing":    {"| `disk_wear` | `disk` | |\n", ""},
		"a ceiling raised": {"| `backup_stale` | `vm`, `container` | `warning` |", "| `backup_stale` | `vm`, `container` | `critical` |"},
	} {
		if !strings.Contains(doc, drift[0]) {
			t.Fatalf("%s: the doc has no %q", what, drift[0])
		}
		if len(judgedDocProblems(strings.Replace(doc, drift[0], drift[1], 1))) == 0 {
			t.Errorf("%s went unnoticed", what)
		}
	}
}
