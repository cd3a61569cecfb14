package bus

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
)

// The subject and type table of CONTRACTS.md §4, written out.
func TestSubjectsMatchTheContract(t *testing.T) {
	for _, ev := range []string{"opened", "updated", "repeated", "resolved", "reopened", "suppressed"} {
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
}

func pair(a, b string) [2]string { return [2]string{a, b} }

func TestSubjectHelpersRefuseUnknownValues(t *testing.T) {
	if _, _, err := FindingSubject("closed", "warning"); err == nil || !strings.Contains(err.Error(), "finding event") {
		t.Errorf("unknown event: %v", err)
	}
	if _, _, err := FindingSubject(FindingOpened, "warning.>"); err == nil || !strings.Contains(err.Error(), "severity") {
		t.Errorf("unknown severity: %v", err)
	}
	if _, _, err := ApprovalSubject("granted"); err == nil {
		t.Error("unknown approval event accepted")
	}
	for s, ok := range map[string]bool{
		"findings.opened.warning": true, "runs.completed": true, "": false, ".x": false, "x.": false,
		"a..b": false, "a.*": false, "a.>": false, "a b": false, "a\tb": false,
	} {
		if validRelative(s) != ok {
			t.Errorf("validRelative(%q) = %v", s, !ok)
		}
	}
}

// TestEnvelopeIsMarshalOfEvent holds the hand-built envelope to what
// encoding/json makes of the same Event: byte for byte, with escapes.
func TestEnvelopeIsMarshalOfEvent(t *testing.T) {
	at := time.Date(2026, 11, 29, 6, 0, 0, 123456789, time.FixedZone("x", 3600))
	rows := []findings.OutboxEvent{
		{ID: "01JDQ5N3K5Z8J7Q6W2V1M0X9YA", Subject: "findings.opened.warning", Type: "patrold.finding.opened", ResourceID: "vm/101", Time: at,
			Data: json.RawMessage(`{"id":"abc","title":"High CPU on \u003cdb\u003e","n":1.5,"tags":["a"]}`)},
		{ID: "id-2", Subject: "runs.completed", Type: "patrold.run.completed", Time: at.Add(time.Hour), Data: json.RawMessage(`{}`)},
		{ID: "id \"3\" <&>", Subject: "findings.resolved.info", Type: "t\u2028\x01é", ResourceID: "disk/pve1/sda\\x", Time: at, Data: json.RawMessage(`[1,2]`)},
	}
	for _, row := range rows {
		want, err := json.Marshal(NewEvent(row, "patrold/h<1>"))
		if err != nil {
			t.Fatal(err)
		}
		msg, err := EventMessage("patrol", "patrold/h<1>", row)
		if err != nil {
			t.Fatal(err)
		}
		if string(msg.Data) != string(want) {
			t.Errorf("envelope\n%s\nencoding/json\n%s", msg.Data, want)
		}
	}
	if _, err := EventMessage("patrol", "s", findings.OutboxEvent{ID: "x", Subject: "runs.completed"}); err == nil || err.Error() != "data is empty" {
		t.Errorf("empty data: %v", err)
	}
}
