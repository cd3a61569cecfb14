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
	"github.com/patrold/patrold/snapshot"
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
	_, shapes, _ := strings.Cut(sec, "| what | placeholder |")
	for row, term := range map[string]string{"| id |": "vm/101", "| name, id part |": "db-primary", "| tag |": "prod", "| address (": "10.0.0.5"} {
		_, line, ok := strings.Cut(shapes, row)
		line, _, _ = strings.Cut(line, "\n")
		want := digits.ReplaceAllString(m.Mask(term), "N")
		if !ok || !strings.Contains(digits.ReplaceAllString(line, "N"), "`"+want+"`") {
			p = append(p, fmt.Sprintf("MODELS.md: the placeholder row %q does not show the shape %s", row, want))
		}
	}
	p = append(p, checkMaskSources(sec)...)
	if code := "`" + string(agent.CodeNoSuchPlaceholder) + "`"; !strings.Contains(flat, code) {
		p = append(p, "MODELS.md: the section does not name the refusal "+code)
	}
	if w := numberWords[mask.MinTermBytes]; !strings.Contains(flat, "shorter than "+w+" characters") {
		p = append(p, fmt.Sprintf("MODELS.md: the section does not say names shorter than %s characters stay (mask.MinTermBytes)", w))
	}
	return p
}

// sourceRow is one row of the table of vocabulary sources:
// "| `field` | class | terms |".
var sourceRow = regexp.MustCompile("(?m)^\\| `([a-z_.]+)` \\| ([a-z]+) \\| (.+) \\|$")

// checkMaskSources compares the table of vocabulary sources with
// mask.Sources, both ways. Every field it names must be a field of a
// snapshot resource (by its JSON name).
func checkMaskSources(sec string) []string {
	var p []string
	doc := map[string][2]string{}
	var order []string
	for _, m := range sourceRow.FindAllStringSubmatch(sec, -1) {
		doc[m[1]] = [2]string{m[2], m[3]}
		order = append(order, m[1])
	}
	var code []string
	for _, src := range mask.Sources() {
		code = append(code, src.Field)
		row, ok := doc[src.Field]
		switch {
		case !ok:
			p = append(p, fmt.Sprintf("MODELS.md: the vocabulary draws from %s (mask.Sources) but the table has no row for it", src.Field))
		case row != [2]string{src.Class, src.What}:
			p = append(p, fmt.Sprintf("MODELS.md: the row of %s says %q, the code %q", src.Field, row, [2]string{src.Class, src.What}))
		}
		if !resourceField(reflect.TypeFor[snapshot.Resource](), strings.Split(src.Field, ".")) {
			p = append(p, fmt.Sprintf("mask.Sources names %s, which no snapshot resource has", src.Field))
		}
	}
	if strings.Join(order, ",") != strings.Join(code, ",") {
		p = append(p, fmt.Sprintf("MODELS.md: the vocabulary sources are %q, the code's (mask.Sources) %q", order, code))
	}
	return p
}

// resourceField says whether t (a struct, or a pointer to or a slice of
// one) has the field path, by JSON names.
func resourceField(t reflect.Type, path []string) bool {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if len(path) == 0 {
		return true
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == path[0] {
			return resourceField(f.Type, path[1:])
		}
	}
	return false
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
		"source dropped":    {"| `labels` | tag |", "| `label_values` | tag |"},
		"source class":      {"| `backup.storage` | id |", "| `backup.storage` | name |"},
		"source terms":      {"the hosts of URLs", "the URLs"},
	} {
		if !strings.Contains(doc, edit[0]) {
			t.Fatalf("%s: %q is not in MODELS.md", name, edit[0])
		}
		if got := checkMasking(strings.Replace(doc, edit[0], edit[1], 1)); len(got) == 0 {
			t.Errorf("%s: the guard reported nothing", name)
		}
	}
}
