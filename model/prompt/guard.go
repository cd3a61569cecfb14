package prompt

import (
	"strings"
	"unicode"
)

// DisclosureWords is how many consecutive policy words a reply may not
// repeat (docs/MODEL_STAGES.md).
const DisclosureWords = 6

// WithheldText replaces a reply the guard refused.
const WithheldText = "[reply withheld: it repeated the system policy]"

// Disclosure is the disclosure guard of one policy. Safe for concurrent use.
type Disclosure struct {
	grams map[string]struct{}
}

// Guard builds the disclosure guard for policy: it remembers every run of
// DisclosureWords consecutive words. Words are compared after the same
// folding the neutraliser uses (case, look-alikes, invisible characters),
// and punctuation and spacing between words are ignored, so reformatting
// the policy does not get it through.
func Guard(policy string) *Disclosure {
	d := &Disclosure{grams: map[string]struct{}{}}
	words := guardWords(policy)
	for i := 0; i+DisclosureWords <= len(words); i++ {
		d.grams[strings.Join(words[i:i+DisclosureWords], " ")] = struct{}{}
	}
	return d
}

// Check reports whether reply may be shown: false when it repeats
// DisclosureWords consecutive words of the policy.
func (d *Disclosure) Check(reply string) (ok bool) {
	if len(d.grams) == 0 {
		return true
	}
	words := guardWords(reply)
	for i := 0; i+DisclosureWords <= len(words); i++ {
		if _, hit := d.grams[strings.Join(words[i:i+DisclosureWords], " ")]; hit {
			return false
		}
	}
	return true
}

// guardWords folds s and splits it into words of letters and digits.
func guardWords(s string) []string {
	folded := string(foldView(s).text)
	return strings.FieldsFunc(folded, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}
