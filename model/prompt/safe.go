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

// SafeText returns untrusted s made fit for text patrold writes itself, so
// that subscribers, the API, the CLI and a later prompt inherit no live
// instruction: every instruction-like span is replaced by its marker (on the
// raw text), invisible and control characters are dropped, look-alike
// letters are folded to the ASCII letter they imitate, runs of white space
// become one space, and the result is capped at maxRunes runes (an ellipsis
// marks the cut). Invalid UTF-8 becomes U+FFFD. The result is stable:
// SafeText(SafeText(s, n), n) == SafeText(s, n).
func SafeText(s string, maxRunes int) string {
	if maxRunes <= 0 {
		return ""
	}
	if plainASCII(s) && len(s) <= maxRunes {
		return s
	}
	var clean strings.Builder
	clean.Grow(len(s))
	space := false
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case invisible(r):
			continue
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
	out := (*Neutraliser)(nil).Neutralise(clean.String()).Text
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
	return string(r)
}
