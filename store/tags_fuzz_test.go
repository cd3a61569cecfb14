package store_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/patrold/patrold/store"
)

// referenceTags is how the column was read before the plain-string fast
// path: encoding/json, errors ignored.
func referenceTags(s string) []string {
	var out []string
	if s != "" && s != "[]" {
		_ = json.Unmarshal([]byte(s), &out)
	}
	return out
}

func TestDecodeTags(t *testing.T) {
	for s, want := range map[string][]string{
		"":                       nil,
		"[]":                     nil,
		"null":                   nil,
		`["prod"]`:               {"prod"},
		`["prod","web","db-1"]`:  {"prod", "web", "db-1"},
		`[""]`:                   {""},
		`["a\u003cb"]`:           {"a<b"},
		`["caf\u00e9","x"]`:      {"café", "x"},
		`[ "a" , "b" ]`:          {"a", "b"},
		`["a",]`:                 nil,
		`["a"`:                   nil,
		`[1,"b"]`:                {"", "b"},
		`["tab	here"]`:           nil, // a raw control character is not JSON
		`["x"]trailing`:          nil,
		"[\"\xff\"]":             {"\uFFFD"},
		`["quote\"inside","ok"]`: {`quote"inside`, "ok"},
	} {
		if got := store.DecodeTags(s); !reflect.DeepEqual(got, want) || !reflect.DeepEqual(got, referenceTags(s)) {
			t.Errorf("DecodeTags(%q) = %#v, want %#v (encoding/json: %#v)", s, got, want, referenceTags(s))
		}
	}
}

// FuzzDecodeTags: the fast path reads every column exactly as
// encoding/json does.
func FuzzDecodeTags(f *testing.F) {
	for _, s := range []string{"", "[]", `["prod"]`, `["a","b"]`, `[""]`, `["a\u003cb"]`, `["a",]`, `[1]`, "[\"\xff\"]", `[ "a" ]`, `["a""b"]`, `["a",,"b"]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := store.DecodeTags(s), referenceTags(s); !reflect.DeepEqual(got, want) {
			t.Fatalf("DecodeTags(%q) = %#v, encoding/json reads %#v", s, got, want)
		}
	})
}
