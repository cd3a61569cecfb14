package eval

import (
	"reflect"
	"testing"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/signals"
)

// precisionReport is a run of a scenario whose net measured high_memory
// warning on vm/101 and whose model filed findings, in that order.
func precisionReport(filed ...patrol.FindingRef) *patrol.Report {
	rep := &patrol.Report{Status: patrol.StatusIssuesFound, StatusReasons: []string{},
		Signals:  []signals.Signal{{Type: "high_memory", ResourceID: "vm/101", Severity: signals.SeverityWarning, Category: "performance"}},
		Findings: []patrol.FindingRef{{Key: "high_memory", ResourceID: "vm/101", Category: "performance", Severity: "warning", Source: findings.SourceDeterministic}}}
	for _, f := range filed {
		f.Source = findings.SourceModel
		rep.Findings = append(rep.Findings, f)
	}
	return rep
}

func modelFinding(resource, category, key, severity string) patrol.FindingRef {
	return patrol.FindingRef{Key: key, ResourceID: resource, Category: findings.Category(category), Severity: findings.Severity(severity)}
}

// precisionScenario expects the high_memory warning, and a backup
// finding the net does not measure.
func precisionScenario() *Scenario {
	return &Scenario{Expect: Expect{Findings: []Finding{
		{ResourceID: "vm/101", Category: "performance", Key: "high_memory", Severity: "warning"},
		{ResourceID: "vm/101", Category: "backup", Key: "backup-window-too-short", Severity: "watch"},
	}, Supported: []Pair{{ResourceID: "node/pve1", Category: "general"}}}}
}

func wantFigures(precision *float64, c Counts) Figures {
	one := 1.0
	c.Signals, c.FiledByModel = 1, 1
	return Figures{Status: patrol.StatusIssuesFound, StatusReasons: []string{}, Missed: []SignalRef{}, Recall: &one, Precision: precision, Counts: c}
}

// TestMeasureCountsDuplicates: each key of the truth on a resource and
// category supports one model finding, and each supported entry one; a
// finding of another key there is a duplicate, whatever its order.
func TestMeasureCountsDuplicates(t *testing.T) {
	r := func(x float64) *float64 { return &x }
	cases := []struct {
		name  string
		filed []patrol.FindingRef
		want  Figures
	}{
		{"the expected one", []patrol.FindingRef{modelFinding("vm/101", "performance", "high_memory", "warning")},
			wantFigures(r(1), Counts{ModelFindings: 1, Supported: 1})},
		{"an own key first, then the expected one", []patrol.FindingRef{
			modelFinding("vm/101", "performance", "memory-pressure", "warning"),
			modelFinding("vm/101", "performance", "high_memory", "warning"),
			modelFinding("vm/101", "performance", "oom-risk", "warning")},
			wantFigures(r(0.3333), Counts{ModelFindings: 3, Supported: 1, Duplicates: 2})},
		{"an own key alone takes the place", []patrol.FindingRef{modelFinding("vm/101", "performance", "memory-pressure", "warning")},
			wantFigures(r(1), Counts{ModelFindings: 1, Supported: 1})},
		{"a supported pair holds one", []patrol.FindingRef{
			modelFinding("node/pve1", "general", "looks-busy", "info"),
			modelFinding("node/pve1", "general", "looks-busier", "info")},
			wantFigures(r(0.5), Counts{ModelFindings: 2, Supported: 1, Duplicates: 1})},
		{"nothing there is unsupported, not a duplicate", []patrol.FindingRef{modelFinding("vm/101", "security", "intrusion", "warning")},
			wantFigures(r(0), Counts{ModelFindings: 1, UnsupportedFiled: 1})},
	}
	for _, c := range cases {
		if got := measure(precisionReport(c.filed...), precisionScenario()); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got  %+v\n want %+v", c.name, got, c.want)
		}
	}
}

// TestMeasureCountsAboveMeasurement: a model finding more severe than the
// net's signal there (or, unmeasured, than the expected finding) is not
// supported; at or below it is.
func TestMeasureCountsAboveMeasurement(t *testing.T) {
	r := func(x float64) *float64 { return &x }
	cases := []struct {
		name  string
		filed []patrol.FindingRef
		want  Figures
	}{
		{"critical on the net's warning", []patrol.FindingRef{modelFinding("vm/101", "performance", "high_memory", "critical")},
			wantFigures(r(0), Counts{ModelFindings: 1, AboveMeasurement: 1})},
		{"critical under an own key", []patrol.FindingRef{modelFinding("vm/101", "performance", "memory-pressure", "critical")},
			wantFigures(r(0), Counts{ModelFindings: 1, AboveMeasurement: 1})},
		{"watch below the net's warning", []patrol.FindingRef{modelFinding("vm/101", "performance", "high_memory", "watch")},
			wantFigures(r(1), Counts{ModelFindings: 1, Supported: 1})},
		{"warning on an expected watch the net does not measure", []patrol.FindingRef{modelFinding("vm/101", "backup", "backup-window-too-short", "warning")},
			wantFigures(r(0), Counts{ModelFindings: 1, AboveMeasurement: 1})},
		{"the expected watch", []patrol.FindingRef{modelFinding("vm/101", "backup", "backup-window-too-short", "watch")},
			wantFigures(r(1), Counts{ModelFindings: 1, Supported: 1})},
		{"a supported pair has no ceiling", []patrol.FindingRef{modelFinding("node/pve1", "general", "looks-busy", "critical")},
			wantFigures(r(1), Counts{ModelFindings: 1, Supported: 1})},
	}
	for _, c := range cases {
		if got := measure(precisionReport(c.filed...), precisionScenario()); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got  %+v\n want %+v", c.name, got, c.want)
		}
	}
}
