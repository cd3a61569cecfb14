package findings_test

import (
	"testing"

	"github.com/patrold/patrold/findings"
)

func TestRunInputResolution(t *testing.T) {
	perf := &findings.Finding{ID: "p", Category: findings.CategoryPerformance}
	avail := &findings.Finding{ID: "a", Category: findings.CategoryReliability}
	verdict := map[string]string{"p": findings.ResolveAbsent, "a": findings.ResolveAbsent}
	cases := []struct {
		name     string
		f        *findings.Finding
		check    findings.Check
		complete bool
		resolve  map[string]string
		want     string
	}{
		{"detected keeps it open against a verdict", avail, findings.CheckDetected, true, verdict, ""},
		{"absent in a complete run", avail, findings.CheckAbsent, true, nil, findings.ResolveResourceGone},
		{"absent in an incomplete run stays open", avail, findings.CheckAbsent, false, nil, ""},
		{"cleared by its detector", avail, findings.CheckCleared, false, nil, findings.ResolveConditionCleared},
		{"unknown stays open", avail, findings.CheckUnknown, true, nil, ""},
		{"unknown takes a confirmed verdict", avail, findings.CheckUnknown, true, verdict, findings.ResolveAbsent},
		{"present performance in a complete run", perf, findings.CheckPresent, true, nil, findings.ResolveAbsent},
		{"present reliability needs a verdict", avail, findings.CheckPresent, true, nil, ""},
	}
	for _, c := range cases {
		in := findings.RunInput{Complete: c.complete, Resolve: c.resolve, Check: func(*findings.Finding) findings.Check { return c.check }}
		if got := in.Resolution(c.f); got != c.want {
			t.Errorf("%s: Resolution = %q, want %q", c.name, got, c.want)
		}
	}
	// No Check: every unobserved finding counts as absent.
	if got := (findings.RunInput{Complete: true}).Resolution(avail); got != findings.ResolveResourceGone {
		t.Errorf("no Check: Resolution = %q, want %q", got, findings.ResolveResourceGone)
	}
}
