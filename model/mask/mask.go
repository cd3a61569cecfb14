// Package mask replaces the names of a fleet with stable placeholders in
// what is sent to a hosted model, and maps the placeholders back in what
// the model answers (model.mask_names, docs/MODELS.md "Masking names").
//
// Invariants:
//   - one term always becomes the same placeholder, for the masker's life;
//   - Unmask(Mask(s)) == s, except that a term's JSON-escaped form comes
//     back as the term; text shaped like a placeholder is itself masked,
//     so data cannot pose as another term's placeholder;
//   - a term is replaced only where it is not part of a longer word, the
//     longest term first;
//   - the JSON-escaped form of a term (as tool results carry it) becomes
//     the same placeholder;
//   - Invented reports a placeholder-shaped word only when it is neither
//     drawn nor a term: one the model made up.
package mask

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/patrold/patrold/snapshot"
)

// MinTermBytes is the shortest name that is masked: shorter ones ("a",
// "db") are common inside ordinary words and stay as they are.
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

// ipv4RE finds addresses in free text (logs, notes) that no resource
// lists.
var ipv4RE = regexp.MustCompile(`(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}`)

// Masker maps the terms of one fleet to placeholders and back. It is safe
// for concurrent use.
type Masker struct {
	mu      sync.Mutex
	fwd     map[string]string // term (and its escaped forms) -> placeholder
	back    map[string]string // placeholder -> term
	lengths []int             // distinct term lengths, longest first
	counts  map[string]int    // class -> placeholders drawn
}

// Vocabulary is what a Masker hides.
type Vocabulary struct {
	IDs, Names, Tags, Addresses []string
}

// ForSnapshot is the vocabulary of a snapshot: every resource's id
// (as given and canonical), name, tags and addresses (host:port and the
// host alone), and the non-numeric
// parts of its id ("pve1" and "local-zfs" of "storage/pve1/local-zfs").
// Extra ids (findings on resources gone from the snapshot) are added.
func ForSnapshot(snap *snapshot.Snapshot, extraIDs ...string) Vocabulary {
	var v Vocabulary
	addID := func(id string) {
		v.IDs = append(v.IDs, id, snapshot.CanonicalID(id))
		parts := strings.Split(id, "/")
		for _, p := range parts[min(1, len(parts)-1):] {
			if strings.Trim(p, "0123456789") != "" {
				v.Names = append(v.Names, p)
			}
		}
	}
	if snap != nil {
		for i := range snap.Resources {
			r := &snap.Resources[i]
			addID(r.ID)
			if r.Name != "" {
				v.Names = append(v.Names, r.Name)
			}
			v.Tags = append(v.Tags, r.Tags...)
			for _, a := range r.Addresses {
				v.Addresses = append(v.Addresses, a)
				if host, _, err := net.SplitHostPort(a); err == nil {
					v.Addresses = append(v.Addresses, host)
				}
			}
		}
	}
	for _, id := range extraIDs {
		addID(id)
	}
	return v
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
			m.add(c.class, t)
		}
	}
}

// add gives term a placeholder of class unless it has one.
func (m *Masker) add(class, term string) string {
	term = strings.TrimSpace(term)
	if len(term) < MinTermBytes {
		return ""
	}
	if p, ok := m.fwd[term]; ok {
		return p
	}
	m.counts[class]++
	p := fmt.Sprintf("masked-%s-%d", class, m.counts[class])
	if class == classID {
		if kind, _, ok := strings.Cut(term, "/"); ok {
			p = strings.ToLower(kind) + "/" + p
		}
	}
	m.back[p] = term
	for _, form := range forms(term) {
		if _, taken := m.fwd[form]; !taken {
			m.fwd[form] = p
			m.addLength(len(form))
		}
	}
	return p
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

// word says whether b continues a word: a term is not replaced inside one.
func word(b byte) bool {
	return b == '_' || b >= 0x80 || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// Mask replaces every term in s, and every IPv4 address (drawing a new
// placeholder for one not seen before).
func (m *Masker) Mask(s string) string { return m.mask(s, true) }

// MaskEcho masks text the model wrote itself: its earlier answers, sent
// back as the conversation. It is Mask, except that a placeholder-shaped
// word no data carried stays as it is. So a placeholder the model made
// up never becomes a term that Invented would accept.
func (m *Masker) MaskEcho(s string) string { return m.mask(s, false) }

func (m *Masker) mask(s string, data bool) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	// Text shaped like a placeholder in the data is masked like a name,
	// so nothing in the data can pose as the placeholder of another term.
	if data {
		for _, loc := range placeholders(s) {
			m.add(className, s[loc[0]:loc[1]])
		}
	}
	for _, loc := range ipv4RE.FindAllStringIndex(s, -1) {
		if (loc[0] == 0 || !word(s[loc[0]-1]) && s[loc[0]-1] != '.') && (loc[1] == len(s) || !word(s[loc[1]]) && !(s[loc[1]] == '.' && loc[1]+1 < len(s) && word(s[loc[1]+1]))) {
			m.add(classAddr, s[loc[0]:loc[1]])
		}
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if i > 0 && word(s[i-1]) && word(s[i]) {
			continue
		}
		for _, n := range m.lengths {
			if i+n > len(s) {
				continue
			}
			p, ok := m.fwd[s[i:i+n]]
			if !ok || i+n < len(s) && word(s[i+n-1]) && word(s[i+n]) {
				continue
			}
			b.WriteString(s[last:i])
			b.WriteString(p)
			last = i + n
			i += n - 1
			break
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
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
	_, term := m.fwd[w]
	_, drawn := m.back[w]
	return term || drawn
}

// placeholders finds the placeholder-shaped words of s (not inside a
// longer word, as Mask replaces terms).
func placeholders(s string) [][]int {
	var out [][]int
	for _, loc := range placeholderRE.FindAllStringIndex(s, -1) {
		if i := strings.IndexByte(s[loc[0]:loc[1]], '/'); i >= 0 && loc[0] > 0 && word(s[loc[0]-1]) {
			loc[0] += i + 1 // "0a/masked-name-2": the kind is part of a word
		}
		if (loc[0] == 0 || !word(s[loc[0]-1])) && (loc[1] == len(s) || !word(s[loc[1]])) {
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
