package prompt

import (
	"regexp"
	"unicode"
	"unicode/utf8"
)

// A view is a normalised copy of a text that rules are matched against,
// with, for every byte, the span of the original text it came from. A
// match in the view maps back to exactly the original bytes that produced
// it, so the replacement covers look-alike and invisible characters too.
//
// An identity view (start and end nil) is one whose every byte came from
// the original byte at the same offset: the fold of a text that is all
// ASCII, which only lower-cases it.
type view struct {
	text       []byte
	start, end []int32
}

// identity reports a view that maps every byte to itself.
func (v *view) identity() bool { return v.start == nil && len(v.text) > 0 }

func (v *view) add(s string, start, end int) {
	for i := 0; i < len(s); i++ {
		v.text = append(v.text, s[i])
		v.start = append(v.start, int32(start))
		v.end = append(v.end, int32(end))
	}
}

// original maps the view span [s, e) back to the original text.
func (v *view) original(s, e int) (int, int) {
	if v.identity() {
		return s, e
	}
	return int(v.start[s]), int(v.end[e-1])
}

// materialise gives an identity view its explicit offsets (to cut it).
func (v *view) materialise() {
	if !v.identity() {
		return
	}
	v.start, v.end = make([]int32, len(v.text)), make([]int32, len(v.text))
	for i := range v.text {
		v.start[i], v.end[i] = int32(i), int32(i+1)
	}
}

// foldView lower-cases s, folds the confusables listed below to ASCII,
// turns every Unicode space into ' ', and drops invisible and combining
// characters, so "Ｉｇｎｏｒｅ", "іgnore" (Cyrillic і) and "ig\u200bnore" all
// read "ignore".
func foldView(s string) *view {
	if v, ok := asciiView(s); ok {
		return v
	}
	return foldRunes(s)
}

// asciiView is foldView for a text that is all ASCII: no invisible,
// combining or look-alike character can be in it, so folding is
// lower-casing byte for byte, and the view maps each byte to itself.
func asciiView(s string) (*view, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return nil, false
		}
	}
	text := make([]byte, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		text[i] = c
	}
	return &view{text: text}, true
}

// foldRunes is foldView rune by rune, with explicit offsets.
func foldRunes(s string) *view {
	v := &view{text: make([]byte, 0, len(s))}
	for i, r := range s {
		n := utf8.RuneLen(r)
		if r == utf8.RuneError {
			n = 1
		}
		switch {
		case invisible(r) || unicode.Is(unicode.Mn, r):
			continue
		case r < utf8.RuneSelf:
			v.add(string(unicode.ToLower(r)), i, i+n)
		default:
			v.add(foldRune(r), i, i+n)
		}
	}
	return v
}

// htmlTag matches markup an attack may be split across: tags and comments.
var htmlTag = regexp.MustCompile(`<!--[\s\S]{0,200}?-->|</?[a-z][a-z0-9]{0,15}(?:\s[^<>]{0,100})?/?>`)

// stripTags returns v without HTML tags and comments, so
// "Ignore <b>previous</b> instructions" reads as one sentence.
func stripTags(v *view) *view {
	locs := htmlTag.FindAllIndex(v.text, -1)
	if len(locs) == 0 {
		return v
	}
	v.materialise()
	out := &view{text: make([]byte, 0, len(v.text))}
	prev := 0
	for _, l := range locs {
		out.text = append(out.text, v.text[prev:l[0]]...)
		out.start = append(out.start, v.start[prev:l[0]]...)
		out.end = append(out.end, v.end[prev:l[0]]...)
		prev = l[1]
	}
	out.text = append(out.text, v.text[prev:]...)
	out.start = append(out.start, v.start[prev:]...)
	out.end = append(out.end, v.end[prev:]...)
	return out
}

// invisible reports zero-width, bidi-control, soft-hyphen and tag
// characters: they render as nothing, so they can hide or reorder text.
func invisible(r rune) bool {
	switch {
	case r == 0x00AD, r == 0x034F, r == 0x061C, r == 0x180E, r == 0xFEFF:
		return true
	case r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E,
		r >= 0x2060 && r <= 0x2064, r >= 0x2066 && r <= 0x2069,
		r >= 0xE0000 && r <= 0xE007F:
		return true
	}
	return false
}

// confusables folds look-alike letters to ASCII. It is not full NFKC
// (patrold has no Unicode tables beyond the standard library): it covers
// the Cyrillic, Greek, Armenian and Latin letters that render like ASCII
// letters, small capitals, and ligatures. Width and style variants are
// folded arithmetically in foldRune.
var confusables = map[rune]string{
	// Cyrillic
	'а': "a", 'в': "b", 'е': "e", 'ё': "e", 'к': "k", 'м': "m", 'н': "h", 'о': "o", 'р': "p",
	'с': "c", 'т': "t", 'у': "y", 'х': "x", 'і': "i", 'ї': "i", 'ј': "j", 'ѕ': "s", 'ԁ': "d",
	'ԛ': "q", 'ԝ': "w", 'һ': "h", 'ӏ': "l", 'ɡ': "g", 'ѵ': "v", 'ү': "y", 'ԍ': "g",
	'А': "a", 'В': "b", 'Е': "e", 'К': "k", 'М': "m", 'Н': "h", 'О': "o", 'Р': "p",
	'С': "c", 'Т': "t", 'Х': "x", 'У': "y", 'І': "i", 'Ј': "j", 'Ѕ': "s",
	// Greek
	'α': "a", 'ο': "o", 'ι': "i", 'κ': "k", 'ν': "v", 'ρ': "p", 'τ': "t", 'υ': "u", 'χ': "x",
	'ε': "e", 'ϲ': "c", 'ϳ': "j", 'Α': "a", 'Β': "b", 'Ε': "e", 'Ζ': "z", 'Η': "h", 'Ι': "i",
	'Κ': "k", 'Μ': "m", 'Ν': "n", 'Ο': "o", 'Ρ': "p", 'Τ': "t", 'Υ': "y", 'Χ': "x",
	// Armenian
	'օ': "o", 'ս': "u", 'հ': "h", 'ո': "n", 'ց': "g", 'զ': "q",
	// Latin variants
	'ı': "i", 'ſ': "s", 'ℓ': "l", 'ǀ': "l", 'ꞵ': "b", 'ɑ': "a", 'ɩ': "i",
	// small capitals
	'ᴀ': "a", 'ʙ': "b", 'ᴄ': "c", 'ᴅ': "d", 'ᴇ': "e", 'ꜰ': "f", 'ɢ': "g", 'ʜ': "h", 'ɪ': "i",
	'ᴊ': "j", 'ᴋ': "k", 'ʟ': "l", 'ᴍ': "m", 'ɴ': "n", 'ᴏ': "o", 'ᴘ': "p", 'ʀ': "r", 'ꜱ': "s",
	'ᴛ': "t", 'ᴜ': "u", 'ᴠ': "v", 'ᴡ': "w", 'ʏ': "y", 'ᴢ': "z",
	// ligatures
	'ﬀ': "ff", 'ﬁ': "fi", 'ﬂ': "fl", 'ﬃ': "ffi", 'ﬄ': "ffl", 'ﬅ': "st", 'ﬆ': "st",
	// punctuation that imitates ASCII syntax
	'｜': "|", '‹': "<", '›': ">", '＜': "<", '＞': ">", '﹤': "<", '﹥': ">", 'ǃ': "!",
}

// foldRune folds one non-ASCII rune.
func foldRune(r rune) string {
	if s, ok := confusables[r]; ok {
		return s
	}
	switch {
	case unicode.IsSpace(r):
		return " "
	case r >= 0xFF01 && r <= 0xFF5E: // fullwidth ASCII
		return string(unicode.ToLower(r - 0xFEE0))
	case r >= 0x1D400 && r <= 0x1D6A3: // mathematical bold, italic, script, ... letters
		idx := (r - 0x1D400) % 52
		if idx < 26 {
			return string('a' + idx)
		}
		return string('a' + idx - 26)
	case r >= 0x1D7CE && r <= 0x1D7FF: // mathematical digits
		return string('0' + (r-0x1D7CE)%10)
	case r >= 0x24B6 && r <= 0x24CF: // circled capitals
		return string('a' + r - 0x24B6)
	case r >= 0x24D0 && r <= 0x24E9: // circled small letters
		return string('a' + r - 0x24D0)
	case r >= 0x249C && r <= 0x24B5: // parenthesized small letters
		return string('a' + r - 0x249C)
	case r >= 0x1F130 && r <= 0x1F149: // squared capitals
		return string('a' + r - 0x1F130)
	case r >= 0x1F150 && r <= 0x1F169: // negative circled capitals
		return string('a' + r - 0x1F150)
	case r >= 0x1F170 && r <= 0x1F189: // negative squared capitals
		return string('a' + r - 0x1F170)
	}
	return string(unicode.ToLower(r))
}
