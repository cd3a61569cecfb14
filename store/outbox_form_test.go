package store_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/patrold/patrold/store"
)

// compactEscaped is what Enqueue stores when data is not already in
// marshal form: json.Compact, then json.HTMLEscape.
func compactEscaped(data []byte) ([]byte, error) {
	var c, out bytes.Buffer
	if err := json.Compact(&c, data); err != nil {
		return nil, err
	}
	json.HTMLEscape(&out, c.Bytes())
	return out.Bytes(), nil
}

// FuzzMarshalForm: whenever Enqueue skips the Compact and HTMLEscape
// passes, those passes would have accepted the data and left it byte for
// byte as it is. So the shortcut never changes what is stored or what is
// refused. And the shortcut is taken for all such data that is valid
// UTF-8 and nested no deeper than 1000 (what it does not follow itself).
func FuzzMarshalForm(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[true,null,"x"]}`, `{"note":"<b>"}`, `{ "a": 1 }`, "{\"a\":\"\u2028\"}", `{"a":"\"}`,
		`{"a":"\\"}`, `"plain"`, `12.5e3`, `{"a":1,}`, `{"a":1}{"b":2}`, "", `{"a":"x y"}`, `{"a":"\u00e9"}`,
		"{\"a\":\"\xff\"}", `{"a":1,"a":2}`, `[1, 2]`, "\n{}", `{"k":"&amp;"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !store.MarshalForm(data) {
			if got, err := compactEscaped(data); err == nil && bytes.Equal(got, data) && utf8.Valid(data) && depth(data) <= 1000 {
				t.Fatalf("%q is left as it is by Compact and HTMLEscape, but MarshalForm refuses it", data)
			}
			return
		}
		got, err := compactEscaped(data)
		if err != nil {
			t.Fatalf("marshal form %q, but Compact refuses it: %v", data, err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("marshal form %q, but Compact and HTMLEscape make %q", data, got)
		}
	})
}

// depth is the deepest nesting of containers in data (brackets inside
// strings skipped).
func depth(data []byte) int {
	d, most := 0, 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			d++
			most = max(most, d)
		case '}', ']':
			d--
		}
	}
	return most
}

// TestMarshalForm: what json.Marshal makes is stored as it is; white
// space outside strings, characters HTMLEscape rewrites, and anything not
// one valid value take the Compact path.
func TestMarshalForm(t *testing.T) {
	marshalled, err := json.Marshal(map[string]any{"note": "<b> & </b> \u2028", "n": []int{1, 2}, "s": "a b\tc"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	want := map[string]bool{}
	for s, w := range map[string]bool{
		string(marshalled): true, `{"a":"x y"}`: true, `[1,{"b":"\"}"}]`: true,
		`{ "a":1}`: false, "[1,\n2]": false, `{"a":"<"}`: false, `{"a":"&"}`: false, "\"\u2029\"": false,
		`{"a":`: false, `{"a":1}{}`: false, ``: false, "\"\xff\"": false,
		`{"a":1,"a":2}`: true, `-0.5e+10`: true, `01`: false, `1.`: false, `{"a":tru}`: false, `[1,]`: false, `{"a"}`: false,
		`"\u00e9\/"`: true, `"\x"`: false, "\"\u00e9 \ufffd\"": true, "\"\x01\"": false, strings.Repeat("[", 1001) + strings.Repeat("]", 1001): false,
		strings.Repeat("[", 1000) + strings.Repeat("]", 1000): true, `{"a":[{},[],""]}`: true, `[}`: false, `{]`: false,
	} {
		got[s], want[s] = store.MarshalForm([]byte(s)), w
	}
	for s := range want {
		if got[s] != want[s] {
			t.Errorf("MarshalForm(%q) = %v, want %v", s, got[s], want[s])
		}
	}
}

// TestAnySpecialMatchesTheByteTable: the eight-bytes-at-a-time test says
// "special" exactly when one of the bytes is special by the byte table:
// every byte value at every position among plain bytes, and random words.
func TestAnySpecialMatchesTheByteTable(t *testing.T) {
	word := func(b [8]byte) uint64 { return binary.LittleEndian.Uint64(b[:]) }
	for v := range 256 {
		for p := range 8 {
			b := [8]byte{'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'}
			b[p] = byte(v)
			if got, want := store.AnySpecial(word(b)), store.FormSpecial[v]; got != want {
				t.Fatalf("byte %#x at %d: AnySpecial %v, want %v", v, p, got, want)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		var b [8]byte
		want := false
		for p := range b {
			// Mostly plain printable bytes, with some of everything.
			if rng.IntN(4) == 0 {
				b[p] = byte(rng.IntN(256))
			} else {
				b[p] = byte(0x20 + rng.IntN(0x5f))
			}
			want = want || store.FormSpecial[b[p]]
		}
		if got := store.AnySpecial(word(b)); got != want {
			t.Fatalf("%q: AnySpecial %v, want %v", b[:], got, want)
		}
	}
}
