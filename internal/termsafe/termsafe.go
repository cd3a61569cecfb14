// Package termsafe makes text safe to print on a terminal. Control
// characters (C0, DEL, C1: escape sequences, carriage returns,
// backspaces) and format characters (bidi overrides, zero-width
// characters) are written as visible escapes. So a value from a source or
// a model cannot clear the screen, move the cursor, reorder what is shown
// or forge a line. The CLI's text output goes through it
// (docs/FINDINGS.md).
package termsafe

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// live reports a rune a terminal would act on instead of show.
func live(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r) ||
		r == '\u2028' || r == '\u2029'
}

// Field returns s with every live rune escaped, new lines and tabs
// included: one printed field stays on its line.
func Field(s string) string {
	if clean(s, false) {
		return s
	}
	var b strings.Builder
	appendEscaped(&b, s, false)
	return b.String()
}

// clean reports text with nothing to escape (keepLines keeps '\n' and
// '\t').
func clean(s string, keepLines bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return cleanRunes(s[i:], keepLines)
		}
		if (c < 0x20 || c == 0x7f) && !(keepLines && (c == '\n' || c == '\t')) {
			return false
		}
	}
	return true
}

func cleanRunes(s string, keepLines bool) bool {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return false
			}
		}
		if live(r) && !(keepLines && (r == '\n' || r == '\t')) {
			return false
		}
	}
	return true
}

type builder interface {
	WriteString(string) (int, error)
	WriteRune(rune) (int, error)
}

func appendEscaped(b builder, s string, keepLines bool) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(fmt.Sprintf(`\x%02x`, s[i]))
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case live(r) && r < 0x100:
			b.WriteString(fmt.Sprintf(`\x%02x`, r))
		case live(r):
			b.WriteString(fmt.Sprintf(`\u%04x`, r))
		default:
			b.WriteRune(r)
		}
		i += n
	}
}

// Writer escapes every live rune written to w except new lines and tabs,
// the layout of the output itself. Inside a JSON string the escapes it
// writes for format characters (\u202e) are the same characters again, so
// JSON output stays valid and decodes to the same values (JSON encoders
// escape control characters already). A rune split across two writes is
// held until it is complete.
type Writer struct {
	w    io.Writer
	hold []byte
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes it; it reports len(p) when the escaped text
// was written.
func (t *Writer) Write(p []byte) (int, error) {
	data := p
	if len(t.hold) > 0 {
		data = append(t.hold, p...)
		t.hold = nil
	}
	// Hold back an incomplete rune at the end.
	if cut := incompleteTail(data); cut < len(data) {
		t.hold = append([]byte(nil), data[cut:]...)
		data = data[:cut]
	}
	s := string(data)
	if clean(s, true) {
		if _, err := t.w.Write(data); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	var b bytes.Buffer
	appendEscaped(&b, s, true)
	if _, err := t.w.Write(b.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a held incomplete rune, escaped.
func (t *Writer) Flush() error {
	if len(t.hold) == 0 {
		return nil
	}
	var b bytes.Buffer
	appendEscaped(&b, string(t.hold), true)
	t.hold = nil
	_, err := t.w.Write(b.Bytes())
	return err
}

// incompleteTail is where a trailing incomplete UTF-8 sequence of p
// starts (len(p) when there is none).
func incompleteTail(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				return i
			}
			return len(p)
		}
	}
	return len(p)
}
