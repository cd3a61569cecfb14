package assistant

import (
	"regexp"
	"strconv"
	"strings"
)

// UngroundedMarker replaces a figure or id in a model note that no tool
// result of the session supports.
const UngroundedMarker = "[ungrounded]"

var (
	// noteID matches id-shaped tokens: resource ids (kind/node/name) and
	// patrold's 16-hex finding and session ids.
	noteID = regexp.MustCompile(`[A-Za-z0-9][A-Za-z0-9_.:-]*(?:/[A-Za-z0-9_.:-]*[A-Za-z0-9_])+|\b[0-9a-f]{16}\b`)
	// noteFigure matches numbers, with an optional unit suffix kept out.
	noteFigure = regexp.MustCompile(`-?\d+(?:[.,]\d+)?`)
	// evidenceNumber finds every number in tool results (JSON or text).
	evidenceNumber = regexp.MustCompile(`-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?`)
)

// groundNote keeps the figures and ids of a model's final text that appear
// in this session's tool results and replaces every other one with
// UngroundedMarker. It returns the note and what it stripped, in order.
func groundNote(text string, evidence []string) (string, []string) {
	all := strings.Join(evidence, "\n")
	numbers := map[float64]bool{}
	for _, m := range evidenceNumber.FindAllString(all, -1) {
		if f, err := strconv.ParseFloat(m, 64); err == nil {
			numbers[f] = true
		}
	}
	var stripped []string
	// Ids first: a figure inside an id is judged with the id.
	spans := noteID.FindAllStringIndex(text, -1)
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		b.WriteString(groundFigures(text[last:sp[0]], numbers, &stripped))
		id := text[sp[0]:sp[1]]
		if strings.Contains(all, id) {
			b.WriteString(id)
		} else {
			b.WriteString(UngroundedMarker)
			stripped = append(stripped, id)
		}
		last = sp[1]
	}
	b.WriteString(groundFigures(text[last:], numbers, &stripped))
	return b.String(), stripped
}

func groundFigures(text string, numbers map[float64]bool, stripped *[]string) string {
	return noteFigure.ReplaceAllStringFunc(text, func(m string) string {
		f, err := strconv.ParseFloat(strings.ReplaceAll(m, ",", "."), 64)
		if err == nil && numbers[f] {
			return m
		}
		*stripped = append(*stripped, m)
		return UngroundedMarker
	})
}
