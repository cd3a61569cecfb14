package docs

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/patrold/patrold/model/ground"
)

// guardedTable reads the rows of the table after a guard comment of
// MODEL_STAGES.md: its first cell's code span, then every code span of
// its second cell, sorted.
func guardedTable(t *testing.T, guard string) map[string][]string {
	t.Helper()
	_, rest, ok := strings.Cut(readDoc(t, "MODEL_STAGES.md"), "<!-- guard:"+guard+" -->\n")
	if !ok {
		t.Fatalf("MODEL_STAGES.md: no guard:%s", guard)
	}
	code := regexp.MustCompile("`([^`]+)`")
	out := map[string][]string{}
	for _, line := range strings.Split(rest, "\n")[2:] {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			break
		}
		key := code.FindStringSubmatch(cells[1])
		if key == nil {
			t.Fatalf("MODEL_STAGES.md guard:%s: row %q names nothing", guard, line)
		}
		var ws []string
		for _, m := range code.FindAllStringSubmatch(cells[2], -1) {
			ws = append(ws, m[1])
		}
		slices.Sort(ws)
		out[key[1]] = ws
	}
	return out
}

// TestFigureGrammarDocs: the unit spellings and the number words
// MODEL_STAGES.md lists are exactly the ones the figure grammar reads.
func TestFigureGrammarDocs(t *testing.T) {
	units := map[string][]string{}
	for u, ws := range ground.UnitSpellings() {
		units[string(u)] = ws
	}
	if doc := guardedTable(t, "figure-units"); !maps.EqualFunc(doc, units, slices.Equal) || len(units) < 7 {
		t.Errorf("MODEL_STAGES.md lists the unit spellings\n%v\nthe figure grammar reads\n%v", doc, units)
	}
	words := ground.NumberWords()
	if doc := guardedTable(t, "number-words"); !maps.EqualFunc(doc, words, slices.Equal) || len(words) != 4 {
		t.Errorf("MODEL_STAGES.md lists the number words\n%v\nthe figure grammar reads\n%v", doc, words)
	}
}
