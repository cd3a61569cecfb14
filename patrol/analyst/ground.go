package analyst

import (
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

// corpus is what the tool results of one run have shown the model: the
// figures and resource ids they contain. Safe for concurrent use.
type corpus struct {
	mu      sync.Mutex
	figures map[float64]bool
	ids     map[string]bool
}

func newCorpus() *corpus {
	return &corpus{figures: map[float64]bool{}, ids: map[string]bool{}}
}

// add records one tool result's text. The corpus side is generous: every
// run of digits counts, glued or not (the "02" of "T02:10" is a figure
// the model may quote), since a larger corpus only supports more.
func (c *corpus) add(text string) {
	ids := resourceIDPattern.FindAllString(text, -1)
	figures := numberPattern.FindAllString(text, -1)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range figures {
		if v, err := strconv.ParseFloat(f, 64); err == nil {
			c.figures[v] = true
		}
	}
	for _, id := range ids {
		c.ids[snapshot.CanonicalID(id)] = true
	}
}

// unsupported returns the claims of text that no tool result of the run
// showed. A figure is supported when a figure seen in a tool result rounds
// to it at the figure's own precision ("96%" is supported by 96.3, "97%"
// is not).
func (c *corpus) unsupported(text string) []string {
	cl := ExtractClaims(text)
	if len(cl.Figures)+len(cl.IDs) > maxClaims {
		return []string{"more than " + strconv.Itoa(maxClaims) + " figures and ids"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	for _, id := range cl.IDs {
		if !c.ids[id] && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, f := range cl.Figures {
		if !c.supportsFigure(f) && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

func (c *corpus) supportsFigure(f string) bool {
	v, err := strconv.ParseFloat(f, 64)
	if err != nil {
		return false
	}
	if c.figures[v] {
		return true
	}
	decimals := 0
	if i := strings.IndexByte(f, '.'); i >= 0 {
		decimals = len(f) - i - 1
	}
	if decimals > 6 {
		return false
	}
	scale := math.Pow10(decimals)
	for seen := range c.figures {
		if math.Abs(math.Round(seen*scale)/scale-v) < 1e-9 {
			return true
		}
	}
	return false
}
