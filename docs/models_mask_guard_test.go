package docs

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/model/mask"
	"github.com/patrold/patrold/patrol/analyst"
)

// maskSection is the "Masking names" section of MODELS.md.
func maskSection(doc string) string {
	_, rest, _ := strings.Cut(doc, "### Masking names\n")
	section, _, _ := strings.Cut(rest, "\n### ")
	return section
}

var numberWords = map[int]string{2: "two", 3: "three", 4: "four", 5: "five"}

// digits makes placeholders comparable: the numbers are examples.
var digits = regexp.MustCompile(`[0-9]+`)

// checkMasking reports where the section of MODELS.md differs from
// the code: who masks, the placeholder shapes, the refusal code and the
// shortest name masked.
func checkMasking(doc string) []string {
	sec := maskSection(doc)
	if sec == "" {
		return []string{"MODELS.md: no \"### Masking names\" section"}
	}
	flat := strings.Join(strings.Fields(sec), " ") // prose wraps anywhere
	var p []string
	for who, opts := range map[string]any{"patrol runs": analyst.Options{}, "investigation sessions": assistant.Options{}} {
		if _, ok := reflect.TypeOf(opts).FieldByName("MaskNames"); ok && !strings.Contains(flat, who) {
			p = append(p, fmt.Sprintf("MODELS.md: %s mask names (%T.MaskNames) but the section does not say so", who, opts))
		}
	}
	if strings.Contains(flat, "not masked yet") {
		p = append(p, "MODELS.md: the section says something is not masked yet")
	}
	m := mask.New(mask.Vocabulary{IDs: []string{"vm/101"}, Names: []string{"db-primary"}, Tags: []string{"prod"}, Addresses: []string{"10.0.0.5"}})
	for row, term := range map[string]string{"| id |": "vm/101", "| name, id part |": "db-primary", "| tag |": "prod", "| address (": "10.0.0.5"} {
		_, line, ok := strings.Cut(sec, row)
		line, _, _ = strings.Cut(line, "\n")
		want := digits.ReplaceAllString(m.Mask(term), "N")
		if !ok || !strings.Contains(digits.ReplaceAllString(line, "N"), "`"+want+"`") {
			p = append(p, fmt.Sprintf("MODELS.md: the placeholder row %q does not show the shape %s", row, want))
		}
	}
	if code := "`" + string(agent.CodeNoSuchPlaceholder) + "`"; !strings.Contains(flat, code) {
		p = append(p, "MODELS.md: the section does not name the refusal "+code)
	}
	if w := numberWords[mask.MinTermBytes]; !strings.Contains(flat, "shorter than "+w+" characters") {
		p = append(p, fmt.Sprintf("MODELS.md: the section does not say names shorter than %s characters stay (mask.MinTermBytes)", w))
	}
	return p
}

// TestModelsMaskingMatchesCode keeps the masking section of MODELS.md
// true, and shows the guard notices each kind of drift.
func TestModelsMaskingMatchesCode(t *testing.T) {
	doc := readDoc(t, "MODELS.md")
	for _, problem := range checkMasking(doc) {
		t.Error(problem)
	}
	for name, edit := range map[string][2]string{
		"sessions dropped":  {"in patrol runs and in investigation sessions alike", "in patrol runs"},
		"not masked yet":    {"model.\n\n### Anthropic", "model. Investigation sessions are not masked yet.\n\n### Anthropic"},
		"tag shape":         {"`masked-tag-1`", "`tag-1`"},
		"refusal code":      {"refused with `UNKNOWN_PLACEHOLDER`", "refused"},
		"shortest name":     {"shorter than\n  three characters", "shorter than\n  four characters"},
		"no section at all": {"### Masking names\n", "### Masks\n"},
	} {
		if !strings.Contains(doc, edit[0]) {
			t.Fatalf("%s: %q is not in MODELS.md", name, edit[0])
		}
		if got := checkMasking(strings.Replace(doc, edit[0], edit[1], 1)); len(got) == 0 {
			t.Errorf("%s: the guard reported nothing", name)
		}
	}
}
