package contracts

import (
	"encoding/json"
	"math"
	"strconv"
)

// AppendJSONString appends s quoted as encoding/json quotes it: printable
// ASCII that needs no escape as it is, anything else (a quote, a
// backslash, <, > and &, control bytes, any non-ASCII byte) through
// encoding/json itself, so the two never differ.
func AppendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainJSONByte[s[i]] {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainJSONByte marks the bytes a JSON string holds as they are.
var plainJSONByte = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendJSONFloat appends a finite f as encoding/json writes a float64:
// the shortest decimal that reads back as f, in exponent form below 1e-6
// and from 1e21 on, with a one-digit negative exponent not padded ("1e-7").
// Callers reject NaN and the infinities first (encoding/json refuses
// them).
func AppendJSONFloat(b []byte, f float64) []byte {
	form := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		form = 'e'
	}
	b = strconv.AppendFloat(b, f, form, -1, 64)
	if form == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
