// Package ground checks the figures, times and ids a model's text states
// against what the tool results it read showed, by meaning. Each tool
// result is indexed by resource as named quantities: a metric,
// threshold, age or count with its family and unit. Each figure of a
// claim is read by the one figure grammar (figure.go), then bound to
// the quantity its text names. One code path serves
// every model text patrold keeps:
//   - the model stages' reports and verdicts refuse an unsupported claim
//     (Unsupported);
//   - a remediation session's note and an approval's reason strip it
//     (Strip).
//
// See docs/MODEL_STAGES.md#grounding.
package ground

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/patrold/patrold/snapshot"
)

// MaxClaims bounds the claims checked in one evidence text; more than
// that many figures or ids is itself refused.
const MaxClaims = 64

// resourceIDPattern finds resource ids in free text: a kind prefix, a
// slash and an id body that ends on a letter or digit. The prefixes are
// every kind a snapshot may hold, the cluster included.
var resourceIDPattern = regexp.MustCompile(`(?i)\b(?:` + kindPrefixes() + `)/[A-Za-z0-9_.:/@-]*[A-Za-z0-9_]`)

func kindPrefixes() string {
	var names []string
	for _, k := range append(slices.Clone(snapshot.Kinds), snapshot.KindCluster) {
		names = append(names, string(k))
	}
	return strings.Join(names, "|")
}

// timePattern finds dates, timestamps and clock times in a claim. They are
// checked against the timestamps a tool result showed, never as figures.
var timePattern = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?|\b\d{1,2}:\d{2}(?::\d{2})?\b`)

// nodeNamePattern finds a node named in words ("node pve9"); a name with
// a digit in it is checked against the snapshot's nodes.
var nodeNamePattern = regexp.MustCompile(`(?i)\bnode\s+([a-z0-9][a-z0-9._-]*[a-z0-9])`)

// Unit is the dimension of a figure or a quantity.
type Unit string

// Units. UnitNone is a bare figure: it is compared with a quantity as the
// quantity is shown, whatever its unit.
const (
	UnitNone    Unit = ""
	UnitPercent Unit = "%"
	UnitBytes   Unit = "bytes"
	UnitSeconds Unit = "seconds"
	UnitCelsius Unit = "celsius"
)

// Figure is one number a claim states, bound to the quantity the text
// names for it.
type Figure struct {
	Text     string  // as written ("96.3", "ninety-nine")
	Value    float64 // in the written unit
	Decimals int     // the precision shown
	Unit     Unit
	// Scales and Offset convert Value to the unit's base (seconds,
	// bytes, degrees Celsius): base = Value*scale + Offset, for one scale,
	// or two for a byte multiple that may be decimal or binary.
	Scales []float64
	Offset float64
	// Unreadable: words that name a figure the grammar cannot give a
	// value ("hundreds"). No quantity supports it.
	Unreadable bool
	// Family is the quantity the text names for the figure ("memory",
	// "disk", "backup"); "" when it names none.
	Family string
	// Threshold: the text calls the figure a threshold.
	Threshold bool
}

// Claims are the checkable facts of a text: the figures it states (each
// bound to a quantity), the resource ids and node names it names and the
// times it quotes.
type Claims struct {
	Figures []Figure
	IDs     []string
	Nodes   []string
	Times   []string
}

// quantity families: the words a text may name a quantity by, and the
// family each stands for.
var familyWords = map[string]string{
	"cpu": "cpu", "processor": "cpu",
	"memory": "memory", "mem": "memory", "ram": "memory",
	"disk": "disk", "filesystem": "disk", "fs": "disk", "rootfs": "disk",
	"usage": "usage", "storage": "usage", "pool": "usage", "datastore": "usage",
	"temperature": "temperature", "temp": "temperature",
	"wearout": "wearout", "wear": "wearout",
	"reallocated": "reallocated", "pending": "pending", "uncorrectable": "uncorrectable",
	"crc": "crc", "udma": "crc", "media": "media",
	"backup": "backup", "backups": "backup",
	"swap": "swap", "swapping": "swap",
	"iowait": "iowait", "wait": "iowait",
	"checksum": "checksum",
	// A replication job's failed syncs in a row (fail_count).
	//mutate:ground-fail-count ./model/ground ^TestGroundingReadsTheParityQuantities$
	"fail": "failures", "failures": "failures", "failcount": "failures",
	"nodes":  "nodes",
	"window": "window", "sustained": "window",
	"raised": "raised", "times": "raised",
}

// thresholdWords mark a figure as a threshold, before it ("the trigger
// 80", "above 80") or, the nouns, right after it ("the 80 threshold").
var (
	thresholdWords = map[string]bool{
		"threshold": true, "thresholds": true, "trigger": true, "clear": true, "limit": true, "max": true, "maximum": true,
		"above": true, "below": true, "over": true, "under": true, "exceeds": true, "exceeding": true, "exceeded": true,
	}
	thresholdNouns = map[string]bool{"threshold": true, "trigger": true, "limit": true, "maximum": true}
)

// keyFamily is the family a finding key implies for a figure whose text
// names none.
var keyFamily = map[string]string{
	"high_cpu": "cpu", "high_memory": "memory", "high_disk": "disk",
	"high_swap": "swap", "high_iowait": "iowait",
	"backup_failed": "backup", "backup_stale": "backup",
	"replication_failed": "failures",
}

// familiesOf lists the families a claim's family may bind to: storage
// usage is a resource's disk too.
func familiesMatch(claim string, q *quantity) bool {
	for _, f := range q.families {
		if f == claim {
			return true
		}
	}
	return false
}

// token is one word, figure or boundary of a claim.
type token struct {
	word   string // lower-case word ("" for a figure or a boundary)
	fig    *Figure
	bound  bool // a sentence boundary
	offset int
	// numEnd and end: where a figure's number and its unit end.
	numEnd, end int
}

// ExtractClaims returns the claims of text, which must be the normalised
// text that will be stored. keyFamily is the family the finding's key
// implies ("" for none), used for a figure whose clause names none.
//
// A figure stands on its own: digits glued to a letter, an underscore, a
// slash, a dot or a word's hyphen ("pve1", "sdb3", "db-1") are part of a
// name, unless a unit or a decimal part follows ("memory99%"). Resource
// ids, dates and clock times are taken out first; their digits are not
// figures.
func ExtractClaims(text, implied string) Claims {
	var c Claims
	for _, cl := range extract(text, implied) {
		switch cl.kind {
		case claimFigure:
			c.Figures = append(c.Figures, *cl.fig)
		case claimID:
			c.IDs = append(c.IDs, cl.text)
		case claimNode:
			c.Nodes = append(c.Nodes, cl.text)
		case claimTime:
			c.Times = append(c.Times, cl.text)
		}
	}
	return c
}

// claimKind is what a claim states.
type claimKind int

const (
	claimID claimKind = iota
	claimTime
	claimNode
	claimFigure
)

// claim is one checkable fact of a text, with where it is written
// (text[start:end]: the id, the time, the node's name, the figure's
// number without its unit).
type claim struct {
	kind       claimKind
	text       string // canonical: the id, the time with a T, the node name lower-cased
	fig        *Figure
	start, end int
}

// extract lists the claims of text in order of kind (ids, times, nodes,
// figures), each in text order. Ids and times are blanked out (with as
// many spaces, so offsets hold) before nodes and figures are read.
func extract(text, implied string) []claim {
	var out []claim
	blank := func(pattern *regexp.Regexp, kind claimKind, canon func(string) string) {
		var b strings.Builder
		last := 0
		for _, loc := range pattern.FindAllStringIndex(text, -1) {
			out = append(out, claim{kind: kind, text: canon(text[loc[0]:loc[1]]), start: loc[0], end: loc[1]})
			b.WriteString(text[last:loc[0]])
			b.WriteString(strings.Repeat(" ", loc[1]-loc[0]))
			last = loc[1]
		}
		if last > 0 {
			b.WriteString(text[last:])
			text = b.String()
		}
	}
	blank(resourceIDPattern, claimID, snapshot.CanonicalID)
	blank(timePattern, claimTime, func(t string) string { return strings.ReplaceAll(t, " ", "T") })
	for _, m := range nodeNamePattern.FindAllStringSubmatchIndex(text, -1) {
		if name := text[m[2]:m[3]]; strings.ContainsAny(name, "0123456789") {
			out = append(out, claim{kind: claimNode, text: strings.ToLower(name), start: m[2], end: m[3]})
		}
	}
	toks := tokenize(text)
	for i := range toks {
		f := toks[i].fig
		if f == nil {
			continue
		}
		cl := claim{kind: claimFigure, text: f.Text, fig: f, start: toks[i].offset, end: toks[i].numEnd}
		if f.Unit == UnitFactor {
			cl.end = toks[i].end // "10x" is replaced whole
		}
		if f.Unreadable {
			// A figure nobody can check is a claim nothing supports.
			//mutate:ground-unreadable-figure ./model/ground,./cmd/patrold ^(TestGroundUnreadable|TestFigureClaims)
			out = append(out, cl)
			continue
		}
		f.Family, f.Threshold = bind(toks, i)
		if f.Family == "" && f.Unit != UnitNone && f.Unit != UnitCount {
			f.Family = implied // "vm/101 at 91%" under high_memory; never a bare figure or a count
		}
		out = append(out, cl)
	}
	return out
}

// bind names the quantity of the figure at i: a family word right after
// it, else the nearest family word before it in its sentence, else the
// nearest after it. The figure is a
// threshold when a threshold word stands between the two, or right after
// the figure.
func bind(toks []token, i int) (family string, threshold bool) {
	// "2 pending sectors": the family word right after the figure, when
	// no figure of its own follows it ("91% disk 64%").
	if i+1 < len(toks) && wordFamily(toks[i+1].word) != "" && (i+2 >= len(toks) || toks[i+2].fig == nil) {
		return wordFamily(toks[i+1].word), false
	}
	if i+1 < len(toks) && thresholdNouns[toks[i+1].word] && (i+2 >= len(toks) || toks[i+2].fig == nil) {
		threshold = true // "above the 80 threshold", not "91% threshold 80"
	}
	for j := i - 1; j >= 0 && !toks[j].bound; j-- {
		if thresholdWords[toks[j].word] {
			threshold = true
		}
		if f := wordFamily(toks[j].word); f != "" {
			return f, threshold
		}
	}
	for j := i + 1; j < len(toks) && !toks[j].bound; j++ {
		if toks[j].fig != nil {
			break
		}
		if f := wordFamily(toks[j].word); f != "" {
			return f, threshold
		}
	}
	return "", threshold
}

// wordFamily is the family a word names: the word itself or, for a name
// like memory_percent, its first part that is one.
func wordFamily(w string) string {
	if w == "" {
		return ""
	}
	if f, ok := familyWords[w]; ok {
		return f
	}
	for part := range strings.SplitSeq(w, "_") {
		if f, ok := familyWords[part]; ok {
			return f
		}
	}
	return ""
}

// tokenize splits a normalised claim into words, figures (read by the
// figure grammar, with their units) and sentence boundaries.
func tokenize(s string) []token {
	var out []token
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		prev, _ := utf8.DecodeLastRuneInString(s[:i])
		switch {
		case unicode.IsDigit(r) || signStart(s, i, prev):
			f, numEnd, end, _ := readFigure(s, i)
			// Digits right after a figure in words stand alone: stripped of
			// that figure, the text must read the same ("dozen1").
			afterFigure := len(out) > 0 && out[len(out)-1].fig != nil &&
				(out[len(out)-1].end == i || (prev == '-' && out[len(out)-1].end == i-1))
			glued := i > 0 && gluedBefore(s[:i], prev) && !afterFigure
			unitOK := end > numEnd
			gluedAfter := !unitOK && !wordEnds(s, numEnd)
			if (glued || gluedAfter) && !(unitOK || (glued && f.Decimals > 0)) {
				// part of a name: skip the whole word
				j := numEnd
				for j < len(s) {
					r2, n2 := utf8.DecodeRuneInString(s[j:])
					if !isWordRune(r2) && r2 != '-' && r2 != '.' {
						break
					}
					j += n2
				}
				out = append(out, token{word: strings.ToLower(s[i:j]), offset: i})
				i = j
				continue
			}
			out = append(out, token{fig: &f, offset: i, numEnd: numEnd, end: end})
			i = end
		case r >= 0x2160 && r <= 0x217F: // Roman numeral characters
			if f, numEnd, end, ok := readFigure(s, i); ok {
				out = append(out, token{fig: &f, offset: i, numEnd: numEnd, end: end})
				i = end
				continue
			}
			for i < len(s) { // no numeral: skip the whole run ("ⅫⅫ")
				r2, n2 := utf8.DecodeRuneInString(s[i:])
				if r2 < 0x2160 || r2 > 0x217F {
					break
				}
				i += n2
			}
		case unicode.IsLetter(r) || r == '_':
			j := i
			for j < len(s) {
				r2, n2 := utf8.DecodeRuneInString(s[j:])
				if !unicode.IsLetter(r2) && r2 != '_' {
					break
				}
				j += n2
			}
			if !strings.Contains(s[i:j], "_") && !(i > 0 && isWordRune(prev)) {
				// Number words and Roman numerals are figures too.
				//mutate:ground-number-words ./model/ground,./cmd/patrold ^(TestReadFigures|TestFigureClaims)
				if f, numEnd, end, ok := readFigure(s, i); ok {
					out = append(out, token{fig: &f, offset: i, numEnd: numEnd, end: end})
					i = end
					continue
				}
			}
			out = append(out, token{word: strings.ToLower(s[i:j]), offset: i})
			i = j
		case r == '.' || r == '!' || r == '?' || r == ';' || r == '\n':
			out = append(out, token{bound: true, offset: i})
			i += n
		default:
			i += n
		}
	}
	return out
}

// signStart reports a sign that starts a figure ("-41%"): a minus or
// plus before a digit, after a space or an opening bracket.
func signStart(s string, i int, prev rune) bool {
	r, n := utf8.DecodeRuneInString(s[i:])
	if r != '-' && r != '+' && r != '−' {
		return false
	}
	next, _ := utf8.DecodeRuneInString(s[i+n:])
	return unicode.IsDigit(next) && (i == 0 || unicode.IsSpace(prev) || prev == '(' || prev == '[' || prev == ':' || prev == '=')
}

// gluedBefore reports digits that continue the word before them: a
// letter, an underscore, a slash or a dot right before, or a hyphen that
// follows a letter or digit ("db-1").
func gluedBefore(before string, prev rune) bool {
	switch {
	case unicode.IsLetter(prev), prev == '_', prev == '/', prev == '.':
		return true
	case prev == '-':
		p2, _ := utf8.DecodeLastRuneInString(before[:len(before)-1])
		return len(before) > 1 && (unicode.IsLetter(p2) || unicode.IsDigit(p2))
	}
	return false
}

// Corpus is what the tool results of one run or session have shown the
// model, indexed once as they arrive. Per resource, it holds the named
// quantities (metrics, thresholds, ages and counts, each with its unit).
// It also holds the resource ids and the timestamps that appeared in a
// tool result about that resource. A claim about a resource is checked
// against that resource's quantities only; strings (names, tags, notes,
// logs, errors, timestamps) support no figure. Safe for concurrent use.
type Corpus struct {
	mu  sync.Mutex
	res map[string]*facts
}

// facts are what tool results showed about one resource.
type facts struct {
	quantities []quantity
	seen       map[quantityKey]bool
	ids        map[string]bool
	times      []string
}

// quantity is one named number of a tool result.
type quantity struct {
	name      string // the JSON path, for messages
	families  []string
	threshold bool
	unit      Unit
	value     float64 // as shown, in the unit of the name
	scale     float64 // to the unit's base: base = value*scale + offset
	offset    float64
}

type quantityKey struct {
	name  string
	value float64
}

// Recorded wraps a tool handler so that every result it returns is
// indexed in c as the JSON the model is shown.
func Recorded[H ~func(context.Context, json.RawMessage) (any, error)](c *Corpus, h H) H {
	return func(ctx context.Context, args json.RawMessage) (any, error) {
		res, err := h(ctx, args)
		if err == nil {
			if b, merr := json.Marshal(res); merr == nil {
				c.Add(b)
			}
		}
		return res, err
	}
}

// NewCorpus is an empty corpus.
func NewCorpus() *Corpus { return &Corpus{res: map[string]*facts{}} }

func (c *Corpus) facts(id string) *facts {
	f := c.res[id]
	if f == nil {
		f = &facts{seen: map[quantityKey]bool{}, ids: map[string]bool{id: true}}
		c.res[id] = f
	}
	return f
}

// Add records one tool result, a JSON document (anything else is
// ignored: it supports nothing). Each object that names a
// resource ("resource_id", or an "id" that is a resource id) is the scope
// of everything inside it; nothing outside any resource's object supports
// a claim.
func (c *Corpus) Add(result []byte) {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(result))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.walk(doc, nil, nil)
}

func (c *Corpus) walk(v any, scope *facts, path []string) {
	switch x := v.(type) {
	case map[string]any:
		if id := scopeID(x); id != "" {
			scope, path = c.facts(id), nil
		}
		named := checkNames(x)
		for k, val := range x {
			k = strings.ToLower(k)
			if n, ok := named[k]; ok {
				k = n
			}
			c.walk(val, scope, append(path[:len(path):len(path)], k))
		}
	case []any:
		for _, val := range x {
			c.walk(val, scope, path)
		}
	case string:
		if scope == nil {
			return
		}
		for _, id := range resourceIDPattern.FindAllString(x, -1) {
			scope.ids[snapshot.CanonicalID(id)] = true
		}
		if len(path) > 0 && strings.HasSuffix(path[len(path)-1], "_at") {
			scope.times = append(scope.times, x)
		}
	case json.Number:
		if scope == nil {
			return
		}
		if v, err := x.Float64(); err == nil {
			scope.addQuantity(path, v)
		}
	}
}

// checkMetrics are the metric names a check of a catalogue key measures
// in percent: a check result ({"key": "high_disk", "value": 96.3,
// "threshold": 95}) names its value and threshold by its key.
var checkMetrics = map[string]string{"high_cpu": "cpu_percent", "high_memory": "memory_percent", "high_disk": "usage_percent",
	"high_swap": "swap_percent", "high_iowait": "iowait_percent"}

// checkNames renames the value and threshold of a check result to the
// quantities they are; nil for any other object.
func checkNames(obj map[string]any) map[string]string {
	key, _ := obj["key"].(string)
	metric, ok := checkMetrics[key]
	if !ok {
		return nil
	}
	family, _, _ := strings.Cut(metric, "_")
	return map[string]string{"value": metric, "threshold": "threshold_" + family}
}

// addQuantity names the number at path: its families, its unit and
// whether it is a threshold, all from the keys of its path.
func (f *facts) addQuantity(path []string, v float64) {
	name := strings.Join(path, ".")
	if len(path) == 0 || f.seen[quantityKey{name, v}] {
		return
	}
	q := quantity{name: name, value: v, scale: 1}
	for i := len(path) - 1; i >= 0 && len(q.families) == 0; i-- {
		if fam := wordFamily(path[i]); fam != "" {
			q.families = []string{fam}
		}
	}
	if len(q.families) == 0 {
		return // a number no claim can name (paging, versions)
	}
	if q.families[0] == "usage" {
		q.families = append(q.families, "disk")
	}
	last := path[len(path)-1]
	for _, p := range path {
		if p == "thresholds" || thresholdWords[p] || strings.Contains(p, "_max_") || strings.HasPrefix(p, "threshold_") {
			q.threshold = true
		}
	}
	words := strings.Split(last, "_")
	switch {
	case slicesContains(words, "percent"), q.threshold && slicesContains([]string{"cpu", "memory", "usage"}, q.families[0]),
		q.threshold && q.families[0] == "disk":
		q.unit = UnitPercent
	case slicesContains(words, "ratio"), slicesContains(words, "fraction"):
		q.unit = UnitRatio
	case slicesContains(words, "days"):
		q.unit, q.scale = UnitSeconds, 86400
	case slicesContains(words, "hours"):
		q.unit, q.scale = UnitSeconds, 3600
	case slicesContains(words, "minutes"):
		q.unit, q.scale = UnitSeconds, 60
	case slicesContains(words, "seconds"):
		q.unit = UnitSeconds
	case slicesContains(words, "ms"):
		q.unit, q.scale = UnitSeconds, 1e-3
	case slicesContains(words, "bytes"):
		q.unit = UnitBytes
	case q.families[0] == "temperature" && (slicesContains(words, "f") || slicesContains(words, "fahrenheit")):
		q.unit, q.scale, q.offset = UnitCelsius, fahrenheit.scales[0], fahrenheit.offset
	case q.families[0] == "temperature" && (slicesContains(words, "k") || slicesContains(words, "kelvin")):
		q.unit, q.offset = UnitCelsius, kelvin.offset
	case q.families[0] == "temperature":
		q.unit = UnitCelsius
	}
	f.seen[quantityKey{name, v}] = true
	f.quantities = append(f.quantities, q)
}

func slicesContains(s []string, w string) bool {
	for _, x := range s {
		if x == w {
			return true
		}
	}
	return false
}

// supports reports whether q is the figure: the same family, a threshold
// only when the text calls it one, a unit that agrees, and the value
// equal at the precision the figure shows ("96%" is 96.3, "97%" is not).
func (q *quantity) supports(f *Figure) bool {
	if f.Unreadable || f.Family == "" || !familiesMatch(f.Family, q) || q.threshold != f.Threshold {
		return false
	}
	// A count, a duration or a factor never grounds a percent.
	//mutate:ground-unit-agreement ./model/ground,./cmd/patrold ^(TestGroundUnits|TestFigureClaims)
	if !unitsAgree(f.Unit, q.unit) {
		return false
	}
	if f.Unit == UnitNone || f.Unit == UnitCount {
		return atPrecision(q.value, f) // a bare figure is the quantity as shown
	}
	base := q.value*q.scale + q.offset
	for _, s := range f.Scales {
		if atPrecision((base-f.Offset)/s, f) {
			return true
		}
	}
	return false
}

// unitsAgree reports whether a figure in unit f may name a quantity in
// unit q: a bare figure any; a count only a count; a factor none; else
// the same dimension (°F, K and °C are all temperatures).
func unitsAgree(f, q Unit) bool {
	switch f {
	case UnitNone:
		return true
	case UnitCount:
		return q == UnitNone
	case UnitFactor:
		return false
	}
	return dimension(f) == dimension(q)
}

// dimension is what a unit measures: every temperature scale is one.
func dimension(u Unit) Unit {
	if u == UnitFahrenheit || u == UnitKelvin {
		return UnitCelsius
	}
	return u
}

// atPrecision reports whether the measured value, rounded to the
// figure's decimals, is the figure: "41%" and "41.40%" are 41.4, "41.43%"
// is not. Exponent notation shows its own decimals ("9.97e1" has one).
func atPrecision(measured float64, f *Figure) bool {
	shown := measured
	//mutate:ground-precision ./model/ground,./cmd/patrold ^(TestGroundPrecision|TestFigureClaims)
	shown = roundTo(measured, f.Decimals)
	return shown == f.Value
}

func roundTo(v float64, decimals int) float64 {
	p := math.Pow10(min(decimals, 9))
	return math.Round(v*p) / p
}

// scopeID is the canonical resource an object of a tool result is about.
func scopeID(obj map[string]any) string {
	for _, k := range []string{"resource_id", "id"} {
		if s, ok := obj[k].(string); ok {
			if id := snapshot.CanonicalID(s); resourceIDPattern.MatchString(id) {
				return id
			}
		}
	}
	return ""
}

// Read reports whether a tool result showed the resource.
func (c *Corpus) Read(resourceID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.res[snapshot.CanonicalID(resourceID)] != nil
}

// Unsupported returns the claims of the texts about resourceID that no
// tool result about that resource showed:
//   - a figure no named quantity of the resource supports;
//   - a resource id or node name that no tool result showed;
//   - a time the resource's timestamps do not hold.
//
// key is the finding's key (it may imply the family of a bare figure);
// nodes maps node names to their resource ids (nil: the nodes the results
// showed). More than MaxClaims claims are refused as one.
func (c *Corpus) Unsupported(resourceID, key string, nodes map[string]string, texts ...string) []string {
	var all []claim
	for _, t := range texts {
		all = append(all, extract(t, keyFamily[key])...)
	}
	if len(all) > MaxClaims {
		return []string{"more than " + strconv.Itoa(MaxClaims) + " figures and ids"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	for i := range all {
		if s := c.check(resourceID, nodes, &all[i]); s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// Strip returns text about resourceID with every claim no tool result
// supports (the checks of Unsupported, one by one) replaced by marker,
// and what it replaced, in text order. Beyond MaxClaims claims, every
// further figure and id is replaced.
func (c *Corpus) Strip(resourceID, key string, nodes map[string]string, text, marker string) (string, []string) {
	cls := extract(text, keyFamily[key])
	sort.SliceStable(cls, func(i, j int) bool { return cls[i].start < cls[j].start })
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	var stripped []string
	last := 0
	for i := range cls {
		cl := &cls[i]
		if cl.start < last {
			continue // inside a claim already replaced
		}
		if i < MaxClaims && c.check(resourceID, nodes, cl) == "" {
			continue
		}
		b.WriteString(text[last:cl.start])
		b.WriteString(marker)
		stripped = append(stripped, text[cl.start:cl.end])
		last = cl.end
	}
	b.WriteString(text[last:])
	return b.String(), stripped
}

// nodeRead reports a node name that names a node a tool result showed;
// nodes maps names to node ids (nil: the name is the id's).
func (c *Corpus) nodeRead(nodes map[string]string, name string) bool {
	id, ok := nodes[name]
	if nodes == nil {
		id, ok = "node/"+name, true
	}
	return ok && c.res[id] != nil
}

// check returns how an unsupported claim is named, or "" when a tool
// result about resourceID supports it (c.mu held).
func (c *Corpus) check(resourceID string, nodes map[string]string, cl *claim) string {
	f := c.res[snapshot.CanonicalID(resourceID)]
	if f == nil {
		f = &facts{}
	}
	switch cl.kind {
	case claimID:
		if !f.ids[cl.text] || c.res[cl.text] == nil {
			return cl.text
		}
	case claimNode:
		if !c.nodeRead(nodes, cl.text) {
			return "node " + cl.text
		}
	case claimTime:
		if !f.hasTime(cl.text) {
			return cl.text
		}
	case claimFigure:
		if !f.supportsFigure(cl.fig) {
			return describe(cl.fig)
		}
	}
	return ""
}

// describe names an unsupported figure with the quantity it was bound to.
func describe(f *Figure) string {
	s := f.Text
	if f.Unreadable {
		return s + " (unreadable figure)"
	}
	if f.Unit != UnitNone {
		s += " " + string(f.Unit)
	}
	switch {
	case f.Family == "":
		return s + " (names no quantity)"
	case f.Threshold:
		return s + " (" + f.Family + " threshold)"
	}
	return s + " (" + f.Family + ")"
}

func (f *facts) hasTime(t string) bool {
	for _, s := range f.times {
		if strings.HasPrefix(s, t) || (len(t) <= 8 && strings.Contains(s, "T"+t)) {
			return true
		}
	}
	return false
}

func (f *facts) supportsFigure(fig *Figure) bool {
	for i := range f.quantities {
		if f.quantities[i].supports(fig) {
			return true
		}
	}
	return false
}

// FamilyWords are the words a claim names each quantity family by, by
// family.
func FamilyWords() map[string][]string {
	out := map[string][]string{}
	for w, f := range familyWords {
		out[f] = append(out[f], w)
	}
	return out
}

// ThresholdWords are the words that mark a figure as a threshold.
func ThresholdWords() []string {
	out := make([]string, 0, len(thresholdWords))
	for w := range thresholdWords {
		out = append(out, w)
	}
	return out
}

// CheckMetrics are the metric each check key names its value by (a copy).
func CheckMetrics() map[string]string { return maps.Clone(checkMetrics) }
