package contracts_test

import (
	"slices"
	"testing"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
)

// The wire enums and the findings model name the same values: a severity or
// category added on one side only would be refused on the wire (or stored
// without a subject to publish it on).
func TestWireEnumsMatchTheFindingsModel(t *testing.T) {
	sev := []string{}
	for _, s := range []findings.Severity{findings.SeverityInfo, findings.SeverityWatch, findings.SeverityWarning, findings.SeverityCritical} {
		sev = append(sev, string(s))
	}
	if !slices.Equal(sev, contracts.Severities) {
		t.Errorf("severities: findings %v, contracts %v", sev, contracts.Severities)
	}
	cat := []string{}
	for _, c := range []findings.Category{findings.CategoryPerformance, findings.CategoryCapacity, findings.CategoryReliability,
		findings.CategoryBackup, findings.CategorySecurity, findings.CategoryGeneral} {
		cat = append(cat, string(c))
	}
	if !slices.Equal(cat, contracts.Categories) {
		t.Errorf("categories: findings %v, contracts %v", cat, contracts.Categories)
	}
	out := []string{findings.OutcomeFixVerified, findings.OutcomeFixQueued, findings.OutcomeFixFailed,
		findings.OutcomeFixVerificationFailed, findings.OutcomeFixVerificationUnknown, findings.OutcomeCannotFix,
		findings.OutcomeNeedsAttention, findings.OutcomeTimedOut, findings.OutcomeFixRejected, findings.OutcomeFixExecuted}
	want := []string{}
	for _, o := range contracts.Outcomes {
		want = append(want, string(o))
	}
	if !slices.Equal(out, want) {
		t.Errorf("outcomes: findings %v, contracts %v", out, want)
	}
	for _, ev := range contracts.FindingEvents {
		for _, s := range contracts.Severities {
			subj, typ := findings.FindingSubject(string(ev), findings.Severity(s))
			wSubj, wTyp, err := contracts.FindingSubject(ev, s)
			if err != nil || subj != wSubj || typ != wTyp {
				t.Errorf("%s/%s: findings (%q, %q), contracts (%q, %q, %v)", ev, s, subj, typ, wSubj, wTyp, err)
			}
		}
	}
}
