package store

import "testing"

// TestVersionedTrustsOnlyItsVersion: a value is used only at the version
// it was left at, a later put is never replaced by an older one, and a
// taken value is nobody else's until it is put back.
func TestVersionedTrustsOnlyItsVersion(t *testing.T) {
	var c versioned[string]
	if c.use(0, func(*string) { t.Fatal("used before any put") }) {
		t.Fatal("an empty cache was used")
	}
	c.put("seven", 7)
	c.put("five", 5) // a slower commit that finished later
	var got string
	if !c.use(7, func(v *string) { got = *v }) || got != "seven" {
		t.Fatalf("use at 7: %q", got)
	}
	if c.use(8, func(*string) { t.Fatal("used at another version") }) {
		t.Fatal("used at version 8")
	}
	v, at, ok := c.take()
	if v != "seven" || at != 7 || !ok {
		t.Fatalf("take = %q %d %v", v, at, ok)
	}
	if _, _, ok := c.take(); ok {
		t.Fatal("a taken value was handed out twice")
	}
	c.put("nine", 9)
	if !c.use(9, func(v *string) { got = *v }) || got != "nine" {
		t.Fatalf("use at 9: %q", got)
	}
}
