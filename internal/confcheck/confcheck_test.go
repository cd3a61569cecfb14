package confcheck

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestProblemsKeepOrderAndNameKeys(t *testing.T) {
	var p Problems
	if err := p.Error(); err != nil {
		t.Fatalf("no problem: %v", err)
	}
	p.OneOf("a.kind", "x", "demo", "file")
	p.OneOf("a.ok", "file", "demo", "file")
	p.Positive("a.wait", 0)
	p.Positive("a.fine", time.Second)
	p.NonNegative("a.delay", -time.Second)
	p.NonNegative("a.zero", 0)
	p.AtLeastOne("a.turns", 0)
	p.AtLeastOne("a.one", 1)
	p.Err(errors.New("b.x: bad\nb.y: worse"))
	p.Err(nil)
	p.Line("c.z: given whole")
	p.Addf("d.n", "%d is odd", 3)
	want := []string{`a.kind: "x" is not one of demo, file`, "a.wait: 0s must be positive", "a.delay: -1s must not be negative",
		"a.turns: must be at least 1", "b.x: bad", "b.y: worse", "c.z: given whole", "d.n: 3 is odd"}
	if !slices.Equal(p.List(), want) {
		t.Fatalf("problems\n%q\nwant\n%q", p.List(), want)
	}
	var again Problems
	again.Err(p.Error())
	if !slices.Equal(again.List(), want) {
		t.Fatalf("an Error split back gives %q, want %q", again.List(), want)
	}
}
