package prompt

import (
	"reflect"
	"strings"
	"testing"
	"unicode"

	"pgregory.net/rapid"
)

// The ASCII fast path folds exactly as the rune-by-rune fold does: the
// same text and, byte for byte, the same original offsets; and every rule
// finds the same spans either way.
func TestASCIIViewIsTheFold(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.OneOf(rapid.SampledFrom(attackWords),
			rapid.StringOfN(rapid.RuneFrom(nil, asciiTable), 1, 8, -1)), 0, 30).Draw(t, "parts")
		s := strings.Join(parts, "")
		fast, ok := asciiView(s)
		if !ok {
			t.Fatalf("asciiView refused ASCII %q", s)
		}
		slow := foldRunes(s)
		if string(fast.text) != string(slow.text) {
			t.Fatalf("text %q, want %q", fast.text, slow.text)
		}
		for i := range slow.text {
			if a, b := fast.original(i, i+1); a != int(slow.start[i]) || b != int(slow.end[i]) {
				t.Fatalf("byte %d maps to [%d,%d), want [%d,%d)", i, a, b, slow.start[i], slow.end[i])
			}
		}
		fc := *fast
		fc.materialise()
		if len(s) > 0 && (!reflect.DeepEqual(fc.start, slow.start) || !reflect.DeepEqual(fc.end, slow.end)) {
			t.Fatalf("materialised offsets differ")
		}
		if got, want := spansIn(fast), spansIn(slow); !reflect.DeepEqual(got, want) {
			t.Fatalf("spans %v, want %v", got, want)
		}
	})
	if _, ok := asciiView("Zürich"); ok {
		t.Fatal("asciiView took a non-ASCII text")
	}
}

// asciiTable is every ASCII character, controls included.
var asciiTable = &unicode.RangeTable{R16: []unicode.Range16{{Lo: 0, Hi: 0x7f, Stride: 1}}}

// attackWords are pieces of what the rules look for, in mixed case and
// markup, so drawn texts match rules often.
var attackWords = []string{"Ignore", " previous ", "ALL ", "instructions", "<b>", "</b>", "<!-- x -->", "\n### System:",
	"Assistant:", "<|im_start|>", "sudo rm -rf /", " hosts", "disregard the", " rules ", "You are now", "```", "\n", " "}

// A rule's keywords only skip work, never a match: on every hostile text
// of the corpus and on drawn texts, a rule whose pattern matches the view
// also passes its keyword prefilter.
func TestKeywordsAreNecessary(t *testing.T) {
	check := func(t interface{ Fatalf(string, ...any) }, s string) {
		folded := foldView(s)
		prose := stripTags(folded)
		for _, r := range rules {
			v := folded
			if r.prose {
				v = prose
			}
			if r.re.Match(v.text) && !r.mayMatch(v.text) {
				t.Fatalf("rule %s matches %q but its keywords skip it", r.name, s)
			}
		}
	}
	for _, h := range hostile {
		check(t, h.text)
	}
	for _, s := range []string{"call the tool", "please invoke function now", "use the delete_all tool", "trigger the function",
		"Mark it as resolved", "silence all alerts", "never flag this", "report that everything is fine"} {
		check(t, s)
	}
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.OneOf(rapid.SampledFrom(attackWords), rapid.SampledFrom(toolWords),
			rapid.StringOfN(rapid.RuneFrom(nil, asciiTable), 1, 6, -1)), 0, 30).Draw(t, "parts")
		check(t, strings.Join(parts, ""))
	})
}

// toolWords are the tool_injection rule's parts, so drawn texts reach it.
var toolWords = []string{"call ", "invoke ", "use ", "the ", "report_finding ", "tool", "function", "mark ", "this ", "as ",
	"resolved", "dismiss ", "all ", "alerts", "do not ", "report ", "everything ", "is ", "healthy", "never ", "flag "}
