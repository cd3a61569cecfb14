// Package leakcheck draws fleet names and writes them in every variant a
// hostile note could use. It finds any of them in a request body. It
// serves the tests of model.mask_names (docs/MODELS.md "Masking names").
// Its folding is its own: a fault in the masker's cannot hide a leak.
package leakcheck

import (
	"encoding/json"
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
	"pgregory.net/rapid"
)

// syllables make names that occur in no daemon text, with letters that
// fold in more than one way (ß, þ, ñ, accents).
var syllables = []string{"zor", "vek", "quil", "ryx", "brö", "ñam", "ßel", "kaj", "dün", "wex", "élo", "þor", "yug", "xiv"}

// Name draws a name: two or three syllables, maybe joined by '-', maybe
// with digits, maybe capitalised.
func Name() *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		parts := rapid.SliceOfN(rapid.SampledFrom(syllables), 2, 3).Draw(t, "syllables")
		sep := rapid.SampledFrom([]string{"", "-"}).Draw(t, "sep")
		name := strings.Join(parts, sep)
		if rapid.Bool().Draw(t, "digits") {
			name += "-" + rapid.StringMatching(`[1-9][0-9]{0,2}`).Draw(t, "n")
		}
		if rapid.Bool().Draw(t, "capital") {
			r := []rune(name)
			r[0] = unicode.ToUpper(r[0])
			name = string(r)
		}
		return name
	})
}

// Names draws n names distinct as folded, none inside another.
func Names(t *rapid.T, n int) []string {
	return rapid.SliceOfNDistinct(Name(), n, n, Fold).Filter(func(names []string) bool {
		for i, a := range names {
			for j, b := range names {
				if i != j && strings.Contains(Fold(b), Fold(a)) {
					return false
				}
			}
		}
		return true
	}).Draw(t, "names")
}

// Variant is one way of writing a name in free text.
type Variant struct {
	Name  string
	Write func(string) string
}

// Variants are the ways a name is written. As is, in typographic quotes,
// next to dashes, in other case and width, decomposed. Split by a
// zero-width space, between ideographs, inside URLs, errors and JSON.
var Variants = []Variant{
	{"plain", func(n string) string { return n }},
	{"double quotes", func(n string) string { return "“" + n + "”" }},
	{"single quotes", func(n string) string { return "‘" + n + "’" }},
	{"guillemets", func(n string) string { return "«" + n + "»" }},
	{"em dash", func(n string) string { return "—" + n + "—" }},
	{"en dash", func(n string) string { return n + "–x" }},
	{"upper case", strings.ToUpper},
	{"swapped case", swapCase},
	{"fullwidth", fullwidth},
	{"decomposed", norm.NFD.String},
	{"zero-width space", func(n string) string {
		r := []rune(n)
		k := len(r) / 2
		return string(r[:k]) + "\u200b" + string(r[k:])
	}},
	{"ideographs", func(n string) string { return "节点" + n + "已离线" }},
	{"url host", func(n string) string { return "https://" + n + ":8006/api2/json" }},
	{"url host and domain", func(n string) string { return "https://root@" + n + ".corp.lan/x" }},
	{"dial error", func(n string) string { return "dial tcp " + n + ":22: connect: connection refused" }},
	{"lookup error", func(n string) string { return "lookup " + n + ".corp.lan: no such host" }},
	{"json quoted", func(n string) string { b, _ := json.Marshal(map[string]string{"peer": n}); return string(b) }},
}

func swapCase(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsUpper(r) {
			return unicode.ToLower(r)
		}
		return unicode.ToUpper(r)
	}, s)
}

// fullwidth writes the ASCII of s in fullwidth forms (U+FF01..U+FF5E).
func fullwidth(s string) string {
	return strings.Map(func(r rune) rune {
		if r > ' ' && r < 0x7f {
			return r - 0x21 + 0xff01
		}
		return r
	}, s)
}

// Text is a sentence that starts with mark and carries each term in
// the variant drawn for it.
func Text(t *rapid.T, label, mark string, terms []string) string {
	var b strings.Builder
	b.WriteString(mark)
	for _, term := range terms {
		v := rapid.IntRange(0, len(Variants)-1).Draw(t, label+"/"+term)
		b.WriteString(" see ")
		b.WriteString(Variants[v].Write(term))
		b.WriteString(";")
	}
	return b.String()
}

// Fold is text as compared: NFKC, case folded, default-ignorable
// characters dropped, and the prompt neutraliser's marker for one too
// (the model reads "pve[neutralised:invisible]1" as "pve1").
func Fold(s string) string {
	s = strings.ReplaceAll(s, "[neutralised:invisible]", "")
	s = norm.NFKC.String(cases.Fold().String(norm.NFKC.String(s)))
	return strings.Map(func(r rune) rune {
		if unicode.In(r, unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point) {
			return -1
		}
		return r
	}, s)
}

// Strings are the strings of a JSON body, and of every JSON text
// inside them, folded; a body that is not JSON is one string.
func Strings(body []byte) []string {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return []string{Fold(string(body))}
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, Fold(x))
			var inner any
			if json.Unmarshal([]byte(x), &inner) == nil {
				walk(inner)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				out = append(out, Fold(k))
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// Leaks are the terms some string of body holds, folded.
func Leaks(body []byte, terms []string) []string {
	strs := Strings(body)
	var out []string
	for _, term := range terms {
		f := Fold(term)
		for _, s := range strs {
			if strings.Contains(s, f) {
				out = append(out, term)
				break
			}
		}
	}
	return out
}

// Carries says whether some string of body holds text (folded).
func Carries(body []byte, text string) bool {
	f := Fold(text)
	for _, s := range Strings(body) {
		if strings.Contains(s, f) {
			return true
		}
	}
	return false
}
