package store_test

import (
	"bytes"
	"encoding/json"
	"testing"

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

// FuzzMarshalForm: whenever Enqueue skips the Compact and HTMLEscape passes,
// those passes would have accepted the data and left it byte for byte as
// it is, so the shortcut never changes what is stored or what is refused.
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
	} {
		got[s], want[s] = store.MarshalForm([]byte(s)), w
	}
	for s := range want {
		if got[s] != want[s] {
			t.Errorf("MarshalForm(%q) = %v, want %v", s, got[s], want[s])
		}
	}
}
