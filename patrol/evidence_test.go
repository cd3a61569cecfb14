package patrol

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestEvidenceIsJSONMarshal holds the evidence fast path to json.Marshal,
// byte for byte, over the values detectors put in evidence and their
// edges: floats across the exponent-form boundaries, strings that need
// escaping, integers, booleans, nil, lists.
func TestEvidenceIsJSONMarshal(t *testing.T) {
	check := func(t interface{ Fatalf(string, ...any) }, v any) {
		want, err := json.Marshal(v)
		if err != nil {
			want = nil
		}
		if got := appendEvidence(nil, v); string(got) != string(want) {
			t.Fatalf("appendEvidence(%#v) = %q, json.Marshal %q", v, got, want)
		}
	}
	for _, v := range []any{0.0, math.Copysign(0, -1), 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456789e13, 1.5e-10, -2.5e-300, math.MaxFloat64,
		math.SmallestNonzeroFloat64, 90.5, 100.0, math.Inf(1), math.NaN(), 3, int64(-7), true, false, nil,
		"", "plain text", "a<b", "x&y", "q\"", "back\\slash", "tab\t", "ünï", "\xff", []string{"10.0.0.1"}} {
		check(t, v)
	}
	rapid.Check(t, func(rt *rapid.T) {
		check(rt, rapid.Float64().Draw(rt, "float"))
		check(rt, math.Float64frombits(rapid.Uint64().Draw(rt, "bits")))
		check(rt, rapid.String().Draw(rt, "string"))
		check(rt, rapid.Int().Draw(rt, "int"))
	})
}

// TestTitleIsSprintf: titleFor writes every catalogue title as
// fmt.Sprintf of its template would, names with verbs in them included.
func TestTitleIsSprintf(t *testing.T) {
	for typ, tpl := range titles {
		for _, name := range []string{"pve1", "50%s done", "%d", ""} {
			if got, want := titleFor(typ, name), fmt.Sprintf(tpl, name); got != want {
				t.Errorf("titleFor(%s, %q) = %q, want %q", typ, name, got, want)
			}
		}
	}
	if got, want := titleFor("unknown", "x"), "%!(EXTRA string=x)"; got != want {
		t.Errorf("a type without a template: %q, want %q (as fmt.Sprintf of an empty template)", got, want)
	}
}
