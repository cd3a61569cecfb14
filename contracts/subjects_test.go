package contracts

import (
	"strings"
	"testing"
)

// The subject and type table of docs/NATS.md, written out.
func TestSubjectsMatchTheContract(t *testing.T) {
	for _, ev := range []string{"opened", "updated", "repeated", "resolved", "reopened", "suppressed", "dismissed"} {
		for _, sev := range []string{"info", "watch", "warning", "critical"} {
			subj, typ, err := FindingSubject(FindingEvent(ev), sev)
			if err != nil {
				t.Fatal(err)
			}
			if subj != "findings."+ev+"."+sev || typ != "patrold.finding."+ev {
				t.Errorf("%s/%s: %q %q", ev, sev, subj, typ)
			}
		}
	}
	for _, ev := range []string{"requested", "approved", "denied", "expired"} {
		subj, typ, err := ApprovalSubject(ApprovalEvent(ev))
		if err != nil || subj != "approvals."+ev || typ != "patrold.approval."+ev {
			t.Errorf("%s: %q %q %v", ev, subj, typ, err)
		}
	}
	fixed := map[string][2]string{}
	fixed["run"] = pair(RunSubject())
	fixed["request"] = pair(RequestSubject())
	fixed["outcome"] = pair(OutcomeSubject())
	want := map[string][2]string{
		"run":     {"runs.completed", "patrold.run.completed"},
		"request": {"remediation.requests", "patrold.remediation.request"},
		"outcome": {"remediation.outcomes", "patrold.remediation.outcome"},
	}
	for k, w := range want {
		if fixed[k] != w {
			t.Errorf("%s: %v, want %v", k, fixed[k], w)
		}
	}
	if got := FullSubject("patrol", "runs.completed"); got != "patrol.runs.completed" {
		t.Errorf("FullSubject %q", got)
	}
	if got := FullSubject("patrol", SubjectFindingsAll); got != "patrol.findings.>" {
		t.Errorf("every finding event: %q", got)
	}
}

func pair(a, b string) [2]string { return [2]string{a, b} }

func TestSubjectHelpersRefuseUnknownValues(t *testing.T) {
	if _, _, err := FindingSubject("closed", "warning"); err == nil || !strings.Contains(err.Error(), "finding event") {
		t.Errorf("unknown event: %v", err)
	}
	if _, _, err := FindingSubject(FindingOpened, "warning.>"); err == nil || !strings.Contains(err.Error(), "severity") {
		t.Errorf("unknown severity: %v", err)
	}
	if _, _, err := ApprovalSubject("granted"); err == nil || !strings.Contains(err.Error(), `approval event "granted"`) {
		t.Errorf("unknown approval event: %v", err)
	}
}
