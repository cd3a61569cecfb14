package store

import (
	"encoding/binary"
	"unicode/utf8"
)

// maxFormDepth bounds the nesting marshalForm follows; deeper data takes
// the Compact path (whose own limit is far above anything patrold writes).
const maxFormDepth = 1000

// marshalForm reports whether data is one valid JSON value that
// json.Compact and json.HTMLEscape would leave unchanged: no white space
// outside strings and nothing HTMLEscape rewrites (<, >, &, U+2028,
// U+2029). It checks the grammar in one pass over the bytes, and is false
// for anything it is not sure of (invalid UTF-8, nesting deeper than
// maxFormDepth), which then takes the Compact path (and its error for
// invalid JSON). Duplicate names are left to that path's rules too:
// Compact keeps them, so does this.
func marshalForm(data []byte) bool {
	var buf [32]byte
	stack := buf[:0] // the open containers, '{' or '['
	i, n := 0, len(data)
values:
	for {
		// A value starts at i.
		if i >= n {
			return false
		}
		switch data[i] {
		case '{', '[':
			open, end := data[i], data[i]+2 // '{'+2 is '}', '['+2 is ']'
			if len(stack) == maxFormDepth {
				return false
			}
			if i++; i < n && data[i] == end {
				i++
				break
			}
			stack = append(stack, open)
			if open == '{' {
				if i = formName(data, i); i < 0 {
					return false
				}
			}
			continue values
		case '"':
			i = formString(data, i)
		case 't':
			i = formLiteral(data, i, "true")
		case 'f':
			i = formLiteral(data, i, "false")
		case 'n':
			i = formLiteral(data, i, "null")
		default:
			i = formNumber(data, i)
		}
		if i < 0 {
			return false
		}
		// A value ended at i: a comma, the close of its container, or the
		// end of data.
		for {
			if len(stack) == 0 {
				return i == n
			}
			if i >= n {
				return false
			}
			open := stack[len(stack)-1]
			switch c := data[i]; {
			case c == ',':
				i++
				if open == '{' {
					if i = formName(data, i); i < 0 {
						return false
					}
				}
				continue values
			case c == open+2:
				i++
				stack = stack[:len(stack)-1]
			default:
				return false
			}
		}
	}
}

// formName checks an object member's name and its colon at i and returns
// where the value starts, or -1.
func formName(data []byte, i int) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	if i = formString(data, i); i < 0 || i >= len(data) || data[i] != ':' {
		return -1
	}
	return i + 1
}

// formString checks the string whose opening quote is at i and returns the
// index after its closing quote, or -1: a control character, an invalid
// escape or UTF-8 sequence, or a character HTMLEscape rewrites.
func formString(data []byte, i int) int {
	for i++; i < len(data); {
		// Plain characters, most of any string: eight at a time, then one
		// by one up to the next special byte.
		for i+8 <= len(data) && !anySpecial(binary.LittleEndian.Uint64(data[i:])) {
			i += 8
		}
		for i < len(data) && !formSpecial[data[i]] {
			i++
		}
		if i == len(data) {
			break
		}
		c := data[i]
		switch {
		case c == '"':
			return i + 1
		case c < 0x20, c == '<', c == '>', c == '&':
			return -1
		case c == '\\':
			if i+1 >= len(data) {
				return -1
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(data) || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) || !isHex(data[i+5]) {
					return -1
				}
				i += 6
			default:
				return -1
			}
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				return -1
			}
			i += size
		}
	}
	return -1
}

// formSpecial marks the bytes formString looks at: the quote, the
// backslash, control characters, what HTMLEscape rewrites, and the start
// of every multi-byte UTF-8 sequence.
var formSpecial = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf
	}
	return t
}()

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// anySpecial reports whether any of the eight bytes in x is one formSpecial
// marks. (The usual word tricks: x-ones*n&^x&highs is non-zero exactly
// when some byte is below n, for n up to 0x80, and a byte equal to c is a
// zero byte of x^(ones*c).)
func anySpecial(x uint64) bool {
	zero := func(y uint64) uint64 { return (y - ones) &^ y & highs }
	return ((x-ones*0x20)&^x|zero(x^ones*'"')|zero(x^ones*'\\')|zero(x^ones*'<')|zero(x^ones*'>')|zero(x^ones*'&')|x)&highs != 0
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// formLiteral checks for lit at i.
func formLiteral(data []byte, i int, lit string) int {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// formNumber checks a number at i (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?)
// and returns the index after it, or -1.
func formNumber(data []byte, i int) int {
	n := len(data)
	if i < n && data[i] == '-' {
		i++
	}
	switch {
	case i < n && data[i] == '0':
		i++
	case i < n && isDigit(data[i]):
		for i < n && isDigit(data[i]) {
			i++
		}
	default:
		return -1
	}
	if i < n && data[i] == '.' {
		if i++; i >= n || !isDigit(data[i]) {
			return -1
		}
		for i < n && isDigit(data[i]) {
			i++
		}
	}
	if i < n && (data[i] == 'e' || data[i] == 'E') {
		if i++; i < n && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= n || !isDigit(data[i]) {
			return -1
		}
		for i < n && isDigit(data[i]) {
			i++
		}
	}
	return i
}
