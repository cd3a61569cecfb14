package prompt

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameRunes caps a name patrold writes into its own text (titles,
// summaries, events, approval reasons).
const MaxNameRunes = 64

// Name returns s as patrold may embed it in text it writes itself: see
// SafeText, capped at MaxNameRunes.
func Name(s string) string { return SafeText(s, MaxNameRunes) }

// SafeText returns untrusted s made fit for text patrold writes itself.
// So subscribers, the API, the CLI and a later prompt inherit no live
// instruction:
//   - every instruction-like span is replaced by its marker (on the raw
//     text, and again once it is cleaned);
//   - invisible and control characters are dropped;
//   - look-alike letters are folded to the ASCII letter they imitate;
//   - a digit of any script becomes its ASCII digit;
//   - runs of white space become one space;
//   - the result is capped at maxRunes runes (an ellipsis marks the cut).
//
// Invalid UTF-8 becomes U+FFFD. The result is stable:
// SafeText(SafeText(s, n), n) == SafeText(s, n).
func SafeText(s string, maxRunes int) string {
	if maxRunes <= 0 {
		return ""
	}
	if plainASCII(s) && len(s) <= maxRunes {
		return s
	}
	// Spans are replaced on the raw text first, while lines still start
	// where they did ("### system" on a line of its own), then once more on
	// the cleaned text, which may join what invisible characters split.
	raw, _ := replaceSpans(strings.Map(dropInvisible, strings.ToValidUTF8(s, "\uFFFD")), nil)
	var clean strings.Builder
	clean.Grow(len(raw))
	space := false
	for _, r := range raw {
		switch {
		case unicode.IsSpace(r) || unicode.IsControl(r):
			space = clean.Len() > 0
			continue
		}
		if space {
			clean.WriteByte(' ')
			space = false
		}
		clean.WriteString(lookAlike(r))
	}
	out, _ := replaceSpans(clean.String(), nil)
	if utf8.RuneCountInString(out) <= maxRunes {
		return out
	}
	n := 0
	for i := range out {
		if n == maxRunes-1 {
			return strings.TrimRight(out[:i], " ") + "…"
		}
		n++
	}
	return out
}

func dropInvisible(r rune) rune {
	if invisible(r) {
		return -1
	}
	return r
}

// plainASCII reports printable ASCII with no double spaces and no
// instruction-like span: the common case returned unchanged.
func plainASCII(s string) bool {
	prev := byte(' ')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || (c == ' ' && prev == ' ') {
			return false
		}
		prev = c
	}
	return prev != ' ' && len(findSpans(s)) == 0
}

// lookAlike folds a rune that imitates an ASCII letter or syntax character
// (a confusable letter, a fullwidth form) to that character; any other rune
// is kept as it is, so "Zürich" stays "Zürich".
func lookAlike(r rune) string {
	if r < utf8.RuneSelf {
		return string(r)
	}
	if s, ok := confusables[r]; ok {
		return s
	}
	if r >= 0xFF01 && r <= 0xFF5E {
		return string(r - 0xFEE0)
	}
	if d, ok := digitValue(r); ok {
		return string(rune('0' + d))
	}
	return string(r)
}

// superDigits are the superscript and subscript digits, by value.
var superDigits = map[rune]int{
	'⁰': 0, '¹': 1, '²': 2, '³': 3, '⁴': 4, '⁵': 5, '⁶': 6, '⁷': 7, '⁸': 8, '⁹': 9,
	'₀': 0, '₁': 1, '₂': 2, '₃': 3, '₄': 4, '₅': 5, '₆': 6, '₇': 7, '₈': 8, '₉': 9,
}

// digitValue is the value of a digit of any script ("٩", "९", "𝟗") or a
// superscript or subscript digit, so a figure is stored, and grounded, in
// ASCII. Unicode lays out every decimal digit in runs of ten that start
// at zero.
func digitValue(r rune) (int, bool) {
	if d, ok := superDigits[r]; ok {
		return d, true
	}
	if !unicode.IsDigit(r) {
		return 0, false
	}
	start := r
	for start > 0 && unicode.IsDigit(start-1) && r-start < 100 {
		start--
	}
	return int(r-start) % 10, true
}

// Names applies Name to each of names (tags, labels) and returns a new
// slice; nil stays nil.
func Names(names []string) []string {
	if names == nil {
		return nil
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = Name(n)
	}
	return out
}
