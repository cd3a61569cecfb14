package termsafe_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/patrold/patrold/internal/termsafe"
)

func TestField(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, Zürich 99%":                           "plain text, Zürich 99%",
		"vm/1\x1b[2J\x1b[H\nlevel=ERROR msg=\"all clear\"": `vm/1\x1b[2J\x1b[H\nlevel=ERROR msg="all clear"`,
		"a\u202eb\u200bc\rd\te\x7f\u0085":                  `a\u202eb\u200bc\rd\te\x7f\x85`,
		"bad \xff byte":                                    `bad \xff byte`,
		"":                                                 "",
	} {
		if got := termsafe.Field(in); got != want {
			t.Errorf("Field(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestWriterKeepsLayoutAndJSON: new lines and tabs of the output stay,
// every live rune is escaped, a rune split across writes is whole, and
// JSON written through it decodes to the same value.
func TestWriterKeepsLayoutAndJSON(t *testing.T) {
	var out bytes.Buffer
	w := termsafe.NewWriter(&out)
	in := "line 1\tok\nvm/1\x1b[2J é\u202e\n"
	b := []byte(in)
	for i := range b { // one byte a write: every rune is split
		if _, err := w.Write(b[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := "line 1\tok\nvm/1\\x1b[2J é\\u202e\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	out.Reset()
	v := map[string]string{"title": "ALL\u202eCLEAR\x1b[2J", "id": "vm/1\u200b"}
	if err := json.NewEncoder(w).Encode(v); err != nil {
		t.Fatal(err)
	}
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back["title"] != v["title"] || back["id"] != v["id"] {
		t.Errorf("JSON through the writer: %v %q", err, out.String())
	}
}

func FuzzField(f *testing.F) {
	for _, s := range []string{"ok", "\x1b]0;x\a", "\u202e\u2066", "a\nb", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := termsafe.Field(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Field(%q) = %q is not UTF-8", s, got)
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r) {
				t.Fatalf("Field(%q) = %q keeps %U", s, got, r)
			}
		}
		if termsafe.Field(got) != got {
			t.Fatalf("Field is not stable on %q", s)
		}
	})
}
