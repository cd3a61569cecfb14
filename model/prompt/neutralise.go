package prompt

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// MarkerPrefix starts every replacement: "[neutralised:<rule>]".
const MarkerPrefix = "[neutralised:"

// MaxGrowth bounds the output: len(out) <= MaxGrowth*len(in). The shortest
// span that can be replaced is one two-byte invisible character, and the
// longest marker is under 32 bytes.
const MaxGrowth = 16

// Result is the outcome of neutralising one document.
type Result struct {
	Text string
	// Counts is the number of spans each rule matched (rules that matched
	// nothing are absent). Metrics count each rule once per document.
	Counts map[string]int
}

// Changed reports whether anything was replaced.
func (r Result) Changed() bool { return len(r.Counts) > 0 }

// Neutraliser replaces instruction-like spans of untrusted text (names,
// tags, notes, log lines, tool results) with markers. It is stateless
// apart from its metrics and safe for concurrent use.
type Neutraliser struct {
	neutralised *prometheus.CounterVec
}

// NewNeutraliser builds a neutraliser whose counter
// patrold_prompt_neutralised_total{rule} is registered on reg (nil: not
// registered), with every rule's series pre-created.
func NewNeutraliser(reg prometheus.Registerer) (*Neutraliser, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "patrold_prompt_neutralised_total",
		Help: "Untrusted documents in which a neutraliser rule matched, counted once per rule and document.",
	}, []string{"rule"})
	for _, name := range Rules() {
		c.WithLabelValues(name)
	}
	if reg != nil {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register prompt metrics: %w", err)
		}
	}
	return &Neutraliser{neutralised: c}, nil
}

type span struct {
	start, end int
	rule       string
}

// Neutralise scans text and replaces every matched span, not just the
// first, with "[neutralised:<rule>]". Overlapping spans are merged and take
// the name of the one that starts first (the longest on a tie); every rule
// involved is still counted. Invalid UTF-8 is kept as it is.
func (n *Neutraliser) Neutralise(text string) Result {
	out, counts := replaceSpans(text, nil)
	n.count(counts)
	return Result{Text: out, Counts: counts}
}

// count adds one to each rule that matched in a document.
func (n *Neutraliser) count(counts map[string]int) {
	if n == nil {
		return
	}
	for name := range counts {
		n.neutralised.WithLabelValues(name).Inc()
	}
}

// replaceSpans replaces every matched span of text with its marker and adds
// the matches to counts (allocated when nil and something matched).
func replaceSpans(text string, counts map[string]int) (string, map[string]int) {
	spans := findSpans(text)
	if len(spans) == 0 {
		return text, counts
	}
	if counts == nil {
		counts = map[string]int{}
	}
	for _, s := range spans {
		counts[s.rule]++
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].start != spans[j].start {
			return spans[i].start < spans[j].start
		}
		return spans[i].end > spans[j].end
	})
	var b strings.Builder
	b.Grow(len(text) + 32*len(spans))
	pos := 0
	for i := 0; i < len(spans); {
		cur := spans[i]
		for i++; i < len(spans) && spans[i].start < cur.end; i++ {
			cur.end = max(cur.end, spans[i].end)
		}
		b.WriteString(text[pos:cur.start])
		b.WriteString(MarkerPrefix)
		b.WriteString(cur.rule)
		b.WriteByte(']')
		pos = cur.end
	}
	b.WriteString(text[pos:])
	return b.String(), counts
}

// findSpans returns the original-text spans every rule matched.
func findSpans(text string) []span {
	return append(invisibleRuns(text), spansIn(foldView(text))...)
}

// spansIn runs every rule over the folded view (prose rules over it
// without tags) and maps each match back to the original text.
func spansIn(folded *view) []span {
	var spans []span
	var prose *view
	foldedSig := signature(folded.text)
	var proseSig *textSig
	for _, r := range rules {
		v, sig := folded, foldedSig
		if r.prose {
			if prose == nil {
				prose = stripTags(folded)
				proseSig = foldedSig
				if prose != folded {
					proseSig = signature(prose.text)
				}
			}
			v, sig = prose, proseSig
		}
		if !r.mayMatch(v.text, sig) {
			continue
		}
		for _, loc := range r.re.FindAllIndex(v.text, -1) {
			if loc[1] <= loc[0] {
				continue
			}
			s, e := v.original(loc[0], loc[1])
			spans = append(spans, span{start: s, end: e, rule: r.name})
		}
	}
	return spans
}

// invisibleRuns returns each run of invisible characters as one span.
func invisibleRuns(text string) []span {
	var spans []span
	runStart := -1
	for i, r := range text {
		if invisible(r) {
			if runStart < 0 {
				runStart = i
			}
			continue
		}
		if runStart >= 0 {
			spans = append(spans, span{start: runStart, end: i, rule: RuleInvisible})
			runStart = -1
		}
	}
	if runStart >= 0 {
		spans = append(spans, span{start: runStart, end: len(text), rule: RuleInvisible})
	}
	return spans
}

// validMarker reports whether s is exactly one neutraliser marker.
func validMarker(s string) bool {
	if !strings.HasPrefix(s, MarkerPrefix) || !strings.HasSuffix(s, "]") || !utf8.ValidString(s) {
		return false
	}
	name := s[len(MarkerPrefix) : len(s)-1]
	for _, r := range Rules() {
		if r == name {
			return true
		}
	}
	return false
}
