package analyst

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/patrold/patrold/snapshot"
)

// ReasonUnsupportedClaim is the details.reason of a report refused by
// grounding (agent code POLICY_BLOCKED).
const ReasonUnsupportedClaim = "unsupported_claim"

// maxClaims bounds the claims checked in one evidence text; more than
// that many figures or ids is itself refused.
const maxClaims = 64

// resourceIDPattern finds resource ids in free text: a kind prefix, a
// slash and an id body that ends on a letter or digit.
var resourceIDPattern = regexp.MustCompile(`(?i)\b(?:node|vm|container|storage|disk)/[A-Za-z0-9_.:/@-]*[A-Za-z0-9_]`)

// numberPattern finds decimal figures.
var numberPattern = regexp.MustCompile(`\d+(?:\.\d+)?`)

// Claims are the checkable facts of a text: the figures and resource ids
// it names.
type Claims struct {
	Figures []string
	IDs     []string
}

// ExtractClaims returns the figures and resource ids named in text. A
// figure is a decimal number that stands on its own: digits glued to a
// letter, an underscore, a slash or a dot ("pve1", "sdb3", "v1.2") are
// part of a name, not a figure. Resource ids are canonicalised and their
// digits are not counted as figures.
func ExtractClaims(text string) Claims {
	var c Claims
	ids := resourceIDPattern.FindAllStringIndex(text, -1)
	var rest strings.Builder
	last := 0
	for _, span := range ids {
		c.IDs = append(c.IDs, snapshot.CanonicalID(text[span[0]:span[1]]))
		rest.WriteString(text[last:span[0]])
		rest.WriteByte(' ')
		last = span[1]
	}
	rest.WriteString(text[last:])
	s := rest.String()
	for _, span := range numberPattern.FindAllStringIndex(s, -1) {
		if span[0] > 0 && gluedBefore(s[span[0]-1]) {
			continue
		}
		c.Figures = append(c.Figures, s[span[0]:span[1]])
	}
	return c
}

func gluedBefore(b byte) bool {
	return b == '_' || b == '/' || b == '.' || (b|0x20 >= 'a' && b|0x20 <= 'z') || b >= 0x80
}

// corpus is what the tool results of one run have shown the model, indexed
// once as they arrive: per resource, the figures and resource ids that
// appeared in a tool result about that resource. A claim about a resource
// is checked against that resource's facts only, so a figure seen on
// another resource (or anywhere else in the run) supports nothing, and a
// resource no tool result showed cannot be reported at all. Safe for
// concurrent use.
type corpus struct {
	mu  sync.Mutex
	res map[string]*facts
}

// facts are what tool results showed about one resource. rounded holds
// every figure at each precision 0..maxDecimals, so a claim is checked
// with one lookup however many figures were seen.
type facts struct {
	rounded map[roundedFigure]bool
	ids     map[string]bool
}

type roundedFigure struct {
	decimals int
	value    float64
}

// maxDecimals is the finest precision a claimed figure is checked at;
// finer claims must match a seen figure exactly.
const maxDecimals = 6

func newCorpus() *corpus { return &corpus{res: map[string]*facts{}} }

func (c *corpus) facts(id string) *facts {
	f := c.res[id]
	if f == nil {
		f = &facts{rounded: map[roundedFigure]bool{}, ids: map[string]bool{id: true}}
		c.res[id] = f
	}
	return f
}

// addFigures records every run of digits in text (glued or not: the "02"
// of "T02:10" is a figure the model may quote; a larger corpus only
// supports more) and every resource id.
func (f *facts) add(text string) {
	for _, fig := range numberPattern.FindAllString(text, -1) {
		v, err := strconv.ParseFloat(fig, 64)
		if err != nil {
			continue
		}
		for d := 0; d <= maxDecimals; d++ {
			f.rounded[roundedFigure{d, roundTo(v, d)}] = true
		}
		f.rounded[roundedFigure{-1, v}] = true
	}
	for _, id := range resourceIDPattern.FindAllString(text, -1) {
		f.ids[snapshot.CanonicalID(id)] = true
	}
}

func roundTo(v float64, decimals int) float64 {
	scale := math.Pow10(decimals)
	return math.Round(v*scale) / scale
}

// add records one tool result, a JSON document. Each object that names a
// resource ("resource_id", or an "id" that is a resource id) is the scope
// of everything inside it; text outside any resource's object supports no
// claim.
func (c *corpus) add(result []byte) {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(result))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.walk(doc, nil)
}

func (c *corpus) walk(v any, scope *facts) {
	switch x := v.(type) {
	case map[string]any:
		if id := scopeID(x); id != "" {
			scope = c.facts(id)
		}
		for k, val := range x {
			if scope != nil {
				scope.add(k)
			}
			c.walk(val, scope)
		}
	case []any:
		for _, val := range x {
			c.walk(val, scope)
		}
	case string:
		if scope != nil {
			scope.add(x)
		}
	case json.Number:
		if scope != nil {
			scope.add(x.String())
		}
	}
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

// read reports whether a tool result of this run showed the resource.
func (c *corpus) read(resourceID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.res[snapshot.CanonicalID(resourceID)] != nil
}

// unsupported returns the claims of the texts (title, description,
// evidence) about resourceID that no tool result about that resource
// showed. A figure is supported when a figure seen on the resource rounds
// to it at the figure's own precision ("96%" is supported by 96.3, "97%"
// is not).
func (c *corpus) unsupported(resourceID string, texts ...string) []string {
	var cl Claims
	for _, t := range texts {
		tc := ExtractClaims(t)
		cl.Figures = append(cl.Figures, tc.Figures...)
		cl.IDs = append(cl.IDs, tc.IDs...)
	}
	if len(cl.Figures)+len(cl.IDs) > maxClaims {
		return []string{"more than " + strconv.Itoa(maxClaims) + " figures and ids"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.res[snapshot.CanonicalID(resourceID)]
	if f == nil {
		f = &facts{}
	}
	var out []string
	seen := map[string]bool{}
	for _, id := range cl.IDs {
		if !f.ids[id] && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, fig := range cl.Figures {
		if !f.supportsFigure(fig) && !seen[fig] {
			seen[fig] = true
			out = append(out, fig)
		}
	}
	sort.Strings(out)
	return out
}

func (f *facts) supportsFigure(fig string) bool {
	v, err := strconv.ParseFloat(fig, 64)
	if err != nil {
		return false
	}
	if f.rounded[roundedFigure{-1, v}] {
		return true
	}
	decimals := 0
	if i := strings.IndexByte(fig, '.'); i >= 0 {
		decimals = len(fig) - i - 1
	}
	if decimals > maxDecimals {
		return false
	}
	return f.rounded[roundedFigure{decimals, v}]
}
