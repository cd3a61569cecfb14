package assistant

import (
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/snapshot"
)

func TestDecideFollowsTheAutonomyTable(t *testing.T) {
	const R, A, B = DecisionRun, DecisionApproval, DecisionBlocked
	table := map[findings.Autonomy][4]Decision{ // low, medium, high, never
		findings.AutonomyMonitor:  {B, B, B, B},
		"":                        {B, B, B, B},
		"yolo":                    {B, B, B, B},
		findings.AutonomyApproval: {A, A, A, B},
		findings.AutonomyAssisted: {R, A, A, B},
		findings.AutonomyFull:     {R, R, R, B},
	}
	for autonomy, want := range table {
		for i, risk := range Risks {
			if got := Decide(autonomy, risk); got != want[i] {
				t.Errorf("Decide(%q, %s) = %s, want %s", autonomy, risk, got, want[i])
			}
		}
		if got := Decide(autonomy, "unknown"); got != B {
			t.Errorf("Decide(%q, unknown risk) = %s", autonomy, got)
		}
	}
}

func TestEffectiveAutonomyIsTheStricter(t *testing.T) {
	cases := []struct{ req, cur, want findings.Autonomy }{
		{"", findings.AutonomyAssisted, findings.AutonomyAssisted},
		{findings.AutonomyFull, findings.AutonomyApproval, findings.AutonomyApproval},
		{findings.AutonomyApproval, findings.AutonomyFull, findings.AutonomyApproval},
		{findings.AutonomyFull, findings.AutonomyMonitor, findings.AutonomyMonitor},
		{"bogus", findings.AutonomyFull, findings.AutonomyMonitor},
		{findings.AutonomyFull, "", findings.AutonomyMonitor},
	}
	for _, c := range cases {
		if got := Effective(c.req, c.cur); got != c.want {
			t.Errorf("Effective(%q, %q) = %q, want %q", c.req, c.cur, got, c.want)
		}
	}
}

func TestDecideOutcome(t *testing.T) {
	cases := []struct {
		v    verdict
		want contracts.Outcome
	}{
		{verdict{queued: true, executed: 1}, contracts.OutcomeFixQueued},
		{verdict{interrupted: true, executed: 1, afterWrite: ConditionCleared}, contracts.OutcomeTimedOut},
		{verdict{}, contracts.OutcomeCannotFix},
		{verdict{modelFailed: true}, contracts.OutcomeNeedsAttention},
		{verdict{executed: 1, actionOK: true, afterWrite: ConditionCleared}, contracts.OutcomeFixVerified},
		{verdict{executed: 1, actionOK: false, afterWrite: ConditionCleared}, contracts.OutcomeFixVerified},
		{verdict{executed: 1, actionOK: true, afterWrite: ConditionCleared, unverified: true}, contracts.OutcomeFixVerificationUnknown},
		{verdict{executed: 1, actionOK: true, afterWrite: ConditionPresent}, contracts.OutcomeFixVerificationFailed},
		{verdict{executed: 1, actionOK: false, afterWrite: ConditionPresent}, contracts.OutcomeFixFailed},
		{verdict{executed: 1, actionOK: true, afterWrite: ConditionUnknown}, contracts.OutcomeFixVerificationUnknown},
		{verdict{executed: 1, actionOK: true}, contracts.OutcomeFixVerificationUnknown},
	}
	for _, c := range cases {
		if got := decideOutcome(c.v); got != c.want {
			t.Errorf("%+v: %s, want %s", c.v, got, c.want)
		}
	}
}

func TestCheckCondition(t *testing.T) {
	pol, err := alerts.New(alerts.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	snap := func(status string, metrics map[string]float64) *snapshot.Snapshot {
		return &snapshot.Snapshot{Version: 1, TakenAt: time.Now(), Resources: []snapshot.Resource{
			{ID: "storage/a", Kind: snapshot.KindStorage, Status: status, Metrics: snapshot.MetricsOf(metrics)}}}
	}
	f := &findings.Finding{Key: "high_disk", ResourceID: "Storage/a"}
	cases := []struct {
		name string
		snap *snapshot.Snapshot
		f    *findings.Finding
		want Condition
	}{
		{"above trigger", snap("online", map[string]float64{"usage_percent": 96}), f, ConditionPresent},
		// Hysteresis: between clear (70) and trigger (75) an active finding stays present.
		{"between clear and trigger", snap("online", map[string]float64{"usage_percent": 72}), f, ConditionPresent},
		{"below clear", snap("online", map[string]float64{"usage_percent": 50}), f, ConditionCleared},
		{"metric missing", snap("online", nil), f, ConditionUnknown},
		{"stale metrics", snap("offline", map[string]float64{"usage_percent": 10}), f, ConditionUnknown},
		{"resource gone", snap("online", nil), &findings.Finding{Key: "high_disk", ResourceID: "storage/b"}, ConditionUnknown},
		{"no detector", snap("online", map[string]float64{"usage_percent": 10}), &findings.Finding{Key: "weird-thing", ResourceID: "storage/a"}, ConditionUnknown},
	}
	for _, c := range cases {
		got := CheckCondition(c.snap, pol, c.f)
		if got.Condition != c.want || (got.Condition == ConditionUnknown && got.Reason == "") {
			t.Errorf("%s: %+v, want %s", c.name, got, c.want)
		}
	}
}
