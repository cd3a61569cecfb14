package contracts

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// TestJSONFormsAreEncodingJSON holds AppendJSONString and AppendJSONFloat
// to encoding/json byte for byte: strings that need escaping, are not
// UTF-8 or are plain, floats across the exponent boundaries and from
// random bits.
func TestJSONFormsAreEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain text", "a<b", "x&y", "q\"", "back\\slash", "tab\t", "ünï", "\xff", "\u2028", "~"} {
		want, _ := json.Marshal(s)
		if got := AppendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("AppendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	floats := []float64{0, math.Copysign(0, -1), 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456789e13, 1.5e-10, -2.5e-300,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 90.5, 100}
	for range 20000 {
		floats = append(floats, math.Float64frombits(r.Uint64()))
	}
	for _, f := range floats {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		want, _ := json.Marshal(f)
		if got := AppendJSONFloat(nil, f); string(got) != string(want) {
			t.Fatalf("AppendJSONFloat(%v) = %s, want %s", f, got, want)
		}
	}
}
