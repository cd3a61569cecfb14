// Package mask replaces the names of a fleet with stable placeholders in
// what is sent to a hosted model, and maps the placeholders back in what
// the model answers (model.mask_names, docs/MODELS.md "Masking names").
//
// Masking works on tokens, not bytes. Text and terms are compared folded:
// NFKC, full case folding, default-ignorable characters dropped (Fold).
// Word boundaries are Unicode-aware: letters, marks, digits and '_' join
// a word; quotes, dashes, spaces and ideographs do not.
//
// Invariants:
//   - one term always becomes the same placeholder, for the masker's life;
//   - Fold(Unmask(Mask(s))) == Fold(s): a term in another case or width
//     comes back as the term was given;
//   - text shaped like a placeholder is itself masked, so data cannot
//     pose as another term's placeholder;
//   - a term is replaced only where it is not part of a longer word, the
//     longest term first;
//   - the JSON-escaped form of a term (as tool results carry it) becomes
//     the same placeholder;
//   - every IPv4 and IPv6 address in text, and the host and credentials
//     of every URL, are masked even when no vocabulary names them;
//   - Invented reports a placeholder-shaped word only when it is neither
//     drawn nor a term: one the model made up.
package mask

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/patrold/patrold/model/prompt"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// MinTermBytes is the shortest name that is masked (folded): shorter ones
// ("a", "db") are common inside ordinary words and stay as they are.
const MinTermBytes = 3

// Placeholder shapes: ids keep their kind ("vm/masked-id-3"); names, tags
// and addresses are "masked-name-1", "masked-tag-2", "masked-addr-4".
const (
	classID   = "id"
	className = "name"
	classTag  = "tag"
	classAddr = "addr"
)

// placeholderRE finds what Unmask maps back.
var placeholderRE = regexp.MustCompile(`(?:[a-z]+/)?masked-(?:id|name|tag|addr)-[0-9]+`)

// Address shapes in folded text. ipv6RE finds candidates that
// netip.ParseAddr then decides; urlRE finds a URL's credentials and host.
var (
	ipv4RE = regexp.MustCompile(`(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}`)
	ipv6RE = regexp.MustCompile(`[0-9a-f.]*:[0-9a-f:.]*:[0-9a-f:.]*`)
	urlRE  = regexp.MustCompile(`[a-z][a-z0-9+.-]*://(?:([^\s/?#@\[\]"'<>\\]+)@)?(\[[0-9a-f:.]+\]|[^\s/?#:@\[\]"'<>\\(),;]+)`)
)

// Masker maps the terms of one fleet to placeholders and back. It is safe
// for concurrent use.
type Masker struct {
	mu      sync.Mutex
	fwd     map[string]string // folded term (and its escaped forms) -> placeholder
	back    map[string]string // placeholder -> term as first given
	lengths []int             // distinct folded term lengths, longest first
	counts  map[string]int    // class -> placeholders drawn
}

// Vocabulary is what a Masker hides.
type Vocabulary struct {
	IDs, Names, Tags, Addresses []string
}

// New returns a masker for v. Placeholders are drawn in sorted order of
// the terms, so the same fleet always gets the same placeholders.
func New(v Vocabulary) *Masker {
	m := &Masker{fwd: map[string]string{}, back: map[string]string{}, counts: map[string]int{}}
	m.Add(v)
	return m
}

// Add gives the terms of v that have none a placeholder, drawn in sorted
// order as New draws them. A term keeps the placeholder it has, so a
// session's vocabulary can grow with what it reads.
func (m *Masker) Add(v Vocabulary) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range []struct {
		class string
		terms []string
	}{{classID, v.IDs}, {classAddr, v.Addresses}, {className, v.Names}, {classTag, v.Tags}} {
		terms := append([]string(nil), c.terms...)
		sort.Strings(terms)
		for _, t := range terms {
			if c.class == classAddr {
				m.addAddr(t)
				continue
			}
			m.add(c.class, t)
		}
	}
}

// add gives term a placeholder of class unless it (folded) has one.
func (m *Masker) add(class, term string) string {
	term = strings.TrimSpace(term)
	key := Fold(term)
	if len(key) < MinTermBytes {
		return ""
	}
	if p, ok := m.fwd[key]; ok {
		return p
	}
	m.counts[class]++
	p := fmt.Sprintf("masked-%s-%d", class, m.counts[class])
	if class == classID {
		if kind, _, ok := strings.Cut(key, "/"); ok {
			p = kind + "/" + p
		}
	}
	m.back[p] = term
	m.alias(term, p)
	return p
}

// addAddr is add for an address: the forms of one IP address (IPv6
// zeros and case) share a placeholder.
func (m *Masker) addAddr(term string) string {
	key := Fold(strings.TrimSpace(term))
	if p, ok := m.fwd[key]; ok {
		return p
	}
	canon := ""
	if a, err := netip.ParseAddr(key); err == nil {
		canon = a.String()
	}
	if p, ok := m.fwd[canon]; ok && canon != "" {
		m.alias(term, p)
		return p
	}
	p := m.add(classAddr, term)
	if p != "" && canon != "" {
		m.alias(canon, p)
	}
	return p
}

// alias makes every form of term (folded) mean placeholder p, where no
// other term holds it.
func (m *Masker) alias(term, p string) {
	for _, form := range forms(term) {
		key := Fold(form)
		if _, taken := m.fwd[key]; !taken && key != "" {
			m.fwd[key] = p
			m.addLength(len(key))
		}
	}
}

// forms are term as written and as a JSON string carries it (with and
// without HTML escaping).
func forms(term string) []string {
	out := []string{term}
	for _, html := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(term)
		s := strings.TrimSuffix(b.String(), "\n")
		if s = s[1 : len(s)-1]; s != term && !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func (m *Masker) addLength(n int) {
	i := sort.Search(len(m.lengths), func(i int) bool { return m.lengths[i] <= n })
	if i < len(m.lengths) && m.lengths[i] == n {
		return
	}
	m.lengths = append(m.lengths, 0)
	copy(m.lengths[i+1:], m.lengths[i:])
	m.lengths[i] = n
}

// scriptless are the scripts written without spaces between words: each
// of their characters is a boundary, so a name next to one is a token.
var scriptless = []*unicode.RangeTable{unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar}

// word says whether r continues a word: a term is not replaced inside one.
func word(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
	}
	// Quotes, dashes, spaces and symbols end a word, whatever their bytes.
	//mutate:mask-word-unicode ./model/mask ^TestMaskTokenVariants$
	if r == utf8.RuneError || !unicode.In(r, unicode.L, unicode.M, unicode.N) {
		return false
	}
	return !unicode.In(r, scriptless...)
}

// lastRune is the rune s ends with (utf8.RuneError when empty).
func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}

// firstRune is the rune s starts with (utf8.RuneError when empty).
func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

// Fold is s as the masker compares it: NFKC, then full case folding
// ("ＰＶＥ１" is "pve1", "Straße" is "strasse"). Default-ignorable
// characters (zero-width, soft hyphen, bidi controls) are dropped. So is
// the neutraliser's marker that stands for one.
func Fold(s string) string { return fold(s).s }

// invisibleMarker is what the prompt neutraliser writes for an invisible
// character before the masker sees the text: "pve[marker]1" is "pve1".
var invisibleMarker = prompt.MarkerPrefix + prompt.RuleInvisible + "]"

// folded is a text as compared, with where its positions start in the
// original text.
type folded struct {
	s    string
	orig []int // original offset of each byte of s and of its end; -1 inside a segment; nil: the same
}

// at is the original offset of folded position i, -1 when i is inside
// a segment (no term may start or end there).
func (f *folded) at(i int) int {
	if f.orig == nil {
		return i
	}
	return f.orig[i]
}

// fold folds s segment by segment (a run of ASCII, or one normalization
// segment), keeping where each segment starts.
func fold(s string) folded {
	plain := !strings.Contains(s, invisibleMarker)
	for i := 0; i < len(s) && plain; i++ {
		plain = s[i] < utf8.RuneSelf && (s[i] < 'A' || s[i] > 'Z')
	}
	if plain {
		return folded{s: s}
	}
	var b strings.Builder
	orig := make([]int, 0, len(s)+1)
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], invisibleMarker) {
			i += len(invisibleMarker) // ignorable, as the character it stands for
			continue
		}
		j := i
		for j < len(s) && s[j] < utf8.RuneSelf && (s[j] != '[' || !strings.HasPrefix(s[j:], invisibleMarker)) {
			j++
		}
		if j > i && j < len(s) && !norm.NFKC.PropertiesString(s[j:]).BoundaryBefore() {
			j-- // the last ASCII byte combines with the mark after it
		}
		if j > i {
			seg := foldSegment(s[i:j])
			for k := range len(seg) {
				switch {
				case len(seg) == j-i: // ASCII folds byte for byte
					orig = append(orig, i+k)
				case k == 0:
					orig = append(orig, i)
				default:
					orig = append(orig, -1)
				}
			}
			b.WriteString(seg)
			i = j
			continue
		}
		n := norm.NFKC.NextBoundaryInString(s[i:], true)
		if n <= 0 {
			_, n = utf8.DecodeRuneInString(s[i:])
		}
		seg := foldSegment(s[i : i+n])
		for k := range len(seg) {
			orig = append(orig, -1)
			if k == 0 {
				orig[len(orig)-1] = i
			}
		}
		b.WriteString(seg)
		i += n
	}
	orig = append(orig, len(s))
	return folded{s: b.String(), orig: orig}
}

// caseFold is full case folding. A Caser holds state, so each call has
// its own.
var caseFold = func(s string) string { return cases.Fold().String(s) }

// foldSegment folds one segment: NFKC, case folding, ignorables dropped.
func foldSegment(seg string) string {
	//mutate:mask-nfkc-fold ./model/mask ^TestMaskTokenVariants$
	seg = norm.NFKC.String(seg)
	//mutate:mask-case-fold ./model/mask ^TestMaskTokenVariants$
	seg = caseFold(seg)
	return strings.Map(func(r rune) rune {
		if unicode.In(r, unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point) {
			return -1
		}
		return r
	}, seg)
}

// Mask replaces every term in s, and every IP address and URL host and
// credentials (drawing a new placeholder for one not seen before).
func (m *Masker) Mask(s string) string { return m.mask(s, true) }

// MaskEcho masks text the model wrote itself: its earlier answers, sent
// back as the conversation. It is Mask, except that a placeholder-shaped
// word no data carried stays as it is. So a placeholder the model made
// up never becomes a term that Invented would accept.
func (m *Masker) MaskEcho(s string) string { return m.mask(s, false) }

func (m *Masker) mask(s string, data bool) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := fold(s)
	fs := f.s
	// Text shaped like a placeholder in the data (any width or case) is
	// masked like a name. So nothing in the data can pose as the
	// placeholder of another term.
	if data {
		for _, loc := range placeholders(fs) {
			if a, b := f.at(loc[0]), f.at(loc[1]); a >= 0 && b >= 0 {
				//mutate:mask-placeholder-data ./model/mask ^TestDataCannotPoseAsAPlaceholder$
				m.add(className, s[a:b])
			}
		}
	}
	m.detect(s, &f)
	var b strings.Builder
	last, replaced := 0, false
	for i := 0; i < len(fs); {
		_, size := utf8.DecodeRuneInString(fs[i:])
		start := f.at(i)
		if start < 0 || i > 0 && word(lastRune(fs[:i])) && word(firstRune(fs[i:])) {
			i += size
			continue
		}
		matched := false
		for _, n := range m.lengths {
			if i+n > len(fs) {
				continue
			}
			p, ok := m.fwd[fs[i:i+n]]
			end := f.at(i + n)
			if !ok || end < 0 {
				continue
			}
			//mutate:mask-word-boundary ./model/mask ^TestMaskWholeText$|^TestMaskTokenVariants$
			if i+n < len(fs) && word(lastRune(fs[:i+n])) && word(firstRune(fs[i+n:])) {
				continue // the term is part of a longer word
			}
			b.WriteString(s[last:start])
			b.WriteString(p)
			last, replaced, matched = end, true, true
			i += n
			break
		}
		if !matched {
			i += size
		}
	}
	if !replaced {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// detect adds the addresses in s (folded as f) that no vocabulary
// holds: IPv4 and IPv6 addresses, and the credentials and host of URLs.
func (m *Masker) detect(s string, f *folded) {
	fs := f.s
	for _, loc := range ipv4RE.FindAllStringIndex(fs, -1) {
		before, after := lastRune(fs[:loc[0]]), firstRune(fs[loc[1]:])
		if (loc[0] == 0 || !word(before) && before != '.') && (loc[1] == len(fs) || !word(after) && !(after == '.' && word(firstRune(fs[loc[1]+1:])))) {
			//mutate:mask-free-text-ipv4 ./model/mask ^TestMaskWholeText$
			m.addSpan(s, f, loc, m.addAddr)
		}
	}
	//mutate:mask-free-text-ipv6 ./model/mask ^TestMaskFreeTextAddresses$
	for _, loc := range ipv6Spans(fs) {
		m.addSpan(s, f, loc, m.addAddr)
	}
	for _, sub := range urlRE.FindAllStringSubmatchIndex(fs, -1) {
		if sub[2] >= 0 {
			m.addSpan(s, f, sub[2:4], func(t string) string { return m.add(className, t) }) // user and password
		}
	}
	//mutate:mask-url-host ./model/mask ^TestMaskFreeTextAddresses$
	for _, loc := range urlSpans(fs) {
		m.addSpan(s, f, loc, m.addAddr)
	}
}

// addSpan adds the text of s at folded span loc with add, unless the
// span starts or ends inside a segment.
func (m *Masker) addSpan(s string, f *folded, loc []int, add func(string) string) {
	if a, b := f.at(loc[0]), f.at(loc[1]); a >= 0 && b > a {
		add(s[a:b])
	}
}

// ipv6Spans are the IPv6 addresses in folded text fs (not part of a
// longer word, not times or MAC addresses: netip.ParseAddr decides).
func ipv6Spans(fs string) [][]int {
	var out [][]int
	for _, loc := range ipv6RE.FindAllStringIndex(fs, -1) {
		if before := lastRune(fs[:loc[0]]); loc[0] > 0 && word(before) {
			continue
		}
		for end := loc[1]; end > loc[0]; end-- {
			cand := fs[loc[0]:end]
			if after := firstRune(fs[end:]); end < len(fs) && word(after) {
				break
			}
			if a, err := netip.ParseAddr(cand); err == nil && a.Is6() && !a.IsUnspecified() {
				out = append(out, []int{loc[0], end})
				break
			}
			if c := cand[len(cand)-1]; c != ':' && c != '.' {
				break // only a trailing colon or full stop is trimmed
			}
		}
	}
	return out
}

// Unmask replaces every placeholder in s with its term; a
// placeholder-shaped word this masker never drew stays.
func (m *Masker) Unmask(s string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	last := 0
	for _, loc := range placeholders(s) {
		t, ok := m.back[s[loc[0]:loc[1]]]
		if i := strings.IndexByte(s[loc[0]:loc[1]], '/'); !ok && i >= 0 {
			// "a/masked-name-2": a name placeholder after a slash.
			loc[0] += i + 1
			t, ok = m.back[s[loc[0]:loc[1]]]
		}
		if ok {
			b.WriteString(s[last:loc[0]])
			b.WriteString(t)
			last = loc[1]
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// Invented returns the placeholder-shaped words of s that this masker
// never drew: a model made them up. A word that is a term itself (data
// shaped like a placeholder) is not invented.
func (m *Masker) Invented(s string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, loc := range placeholders(s) {
		w := s[loc[0]:loc[1]]
		if m.known(w) {
			continue
		}
		if i := strings.IndexByte(w, '/'); i >= 0 && m.known(w[i+1:]) {
			continue
		}
		out = append(out, w)
	}
	return out
}

// known says whether w is a term the masker hides or a placeholder it
// drew.
func (m *Masker) known(w string) bool {
	_, term := m.fwd[Fold(w)]
	_, drawn := m.back[w]
	return term || drawn
}

// placeholders finds the placeholder-shaped words of s (not inside a
// longer word, as Mask replaces terms).
func placeholders(s string) [][]int {
	var out [][]int
	for _, loc := range placeholderRE.FindAllStringIndex(s, -1) {
		if i := strings.IndexByte(s[loc[0]:loc[1]], '/'); i >= 0 && loc[0] > 0 && word(lastRune(s[:loc[0]])) {
			loc[0] += i + 1 // "0a/masked-name-2": the kind is part of a word
		}
		if (loc[0] == 0 || !word(lastRune(s[:loc[0]]))) && (loc[1] == len(s) || !word(firstRune(s[loc[1]:]))) {
			out = append(out, loc)
		}
	}
	return out
}

// UnmaskJSON maps the placeholders in the strings of a JSON document
// back (escaping the terms as JSON needs); raw text that is not JSON is
// unmasked as text.
func (m *Masker) UnmaskJSON(raw json.RawMessage) json.RawMessage {
	if !placeholderRE.Match(raw) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return json.RawMessage(m.Unmask(string(raw)))
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(m.unmaskValue(v)) != nil {
		return json.RawMessage(m.Unmask(string(raw)))
	}
	return json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

func (m *Masker) unmaskValue(v any) any {
	switch x := v.(type) {
	case string:
		return m.Unmask(x)
	case []any:
		for i := range x {
			x[i] = m.unmaskValue(x[i])
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[m.Unmask(k)] = m.unmaskValue(e)
		}
		return out
	}
	return v
}
